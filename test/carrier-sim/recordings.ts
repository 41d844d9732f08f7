/**
 * Recordings a carrier simulator serves (the dialed leg's, for the portal's human-segment
 * transcript): by id, each not ready for its first `notReadyGets` downloads (a carrier still
 * finishing the file answers 404). Each simulator checks its own carrier's auth before asking.
 */
import type { CalleeBehaviour } from './carrier.js';
import { recordingAs } from '../helpers/wav.js';

export class SimRecordings {
  private readonly byId = new Map<string, { media: Uint8Array; notReadyGets: number }>();

  /**
   * Stores the callee's `dialRecording` under `id`, as the dial asked for it (channels, format);
   * nothing when the callee has none (its URL then answers 404).
   */
  record(id: string, b: CalleeBehaviour, asked: { channels: 1 | 2; format: string }): void {
    if (b.dialRecording) this.byId.set(id, { media: recordingAs(b.dialRecording, asked), notReadyGets: b.dialRecordingNotReadyGets ?? 0 });
  }

  /** The media for one download, or undefined while it is not there (yet). */
  take(id: string): Uint8Array | undefined {
    const stored = this.byId.get(id);
    return stored && stored.notReadyGets-- <= 0 ? stored.media : undefined;
  }
}
