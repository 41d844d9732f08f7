/**
 * The engine's durable-record stack in one call: transcript bus, Opus audio store and the
 * conversation writer, with a close that runs in the right order (writer drains first).
 */
import type { Clock } from '../../shared/clock.js';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/logger.js';
import { createAudioStore } from './audio-store.js';
import { createTranscriptBus, type TranscriptBus } from '../../shared/records/bus.js';
import { createConversationWriter, type ConversationWriter } from './writer.js';
import type { Sql } from './batch-sql.js';

export interface EngineRecords {
  bus: TranscriptBus;
  writer: ConversationWriter;
  close(): Promise<void>;
}

export async function startEngineRecords(opts: { config: Config; sql: Sql; logger: Logger; clock: Clock; bus?: TranscriptBus }): Promise<EngineRecords> {
  const { config, sql, logger, clock } = opts;
  const bus = opts.bus ?? (await createTranscriptBus({ redisUrl: config.redisUrl, logger }));
  const audio = createAudioStore({ dataDir: config.dataDir, logger });
  const writer = createConversationWriter({ sql, logger, clock, bus, audio });
  let closed = false;
  return {
    bus,
    writer,
    async close() {
      if (closed) return;
      closed = true;
      await writer.close();
      if (!opts.bus) await bus.close();
    },
  };
}
