/**
 * The byte-level `media` reader (media-engine/transports/json-media-scan.ts) against the full
 * parsers it stands in for: known frames, base64 against Buffer's decoder, and a differential run
 * over generated and mutated frames in which everything the scanner accepts must be accepted by
 * the full parser with the same fields and payload bytes.
 */
import { describe, expect, it } from 'vitest';
import { MAX_MEDIA_PAYLOAD_CHARS, parseCarrierFrame, type CarrierParse } from '../../../shared/protocol/twilio-media.js';
import { parseTelnyxFrame } from '../../../media-engine/transports/telnyx.js';
import { decodeBase64, JsonMediaScanner, newScannedMedia, telnyxMediaDialect, twilioMediaDialect, type JsonMediaDialect } from '../../../media-engine/transports/json-media-scan.js';
import { mulberry32 } from '../../carrier-sim/prng.js';

const enc = (s: string): Uint8Array => new TextEncoder().encode(s);
const payload160 = Buffer.from(Array.from({ length: 160 }, (_, i) => (i * 37 + 11) & 0xff)).toString('base64');

interface Case {
  name: string;
  dialect: JsonMediaDialect;
  parse: (text: string) => CarrierParse;
}
const DIALECTS: Case[] = [
  { name: 'twilio', dialect: twilioMediaDialect, parse: parseCarrierFrame },
  { name: 'telnyx', dialect: telnyxMediaDialect, parse: parseTelnyxFrame },
];

function scan(dialect: JsonMediaDialect, text: string | Uint8Array) {
  const bytes = typeof text === 'string' ? enc(text) : text;
  const out = newScannedMedia();
  const scratch = new Uint8Array(2048);
  const ok = new JsonMediaScanner(dialect).scan(bytes, out, scratch);
  return { ok, out, payload: scratch.subarray(0, out.payloadBytes), bytes };
}

describe('json media scan: known frames', () => {
  it('reads a Twilio media frame as Twilio sends it', () => {
    const text = `{"event":"media","sequenceNumber":"3","media":{"track":"inbound","chunk":"1","timestamp":"5","payload":"${payload160}"},"streamSid":"MZ18ad3ab5a668481ce02b83e7395059f0"}`;
    const r = scan(twilioMediaDialect, text);
    expect(r.ok).toBe(true);
    expect(r.out).toMatchObject({ sequenceNumber: 3, track: 'inbound', chunk: 1, timestampMs: 5, payloadBytes: 160 });
    expect(Buffer.from(r.bytes.subarray(r.out.streamStart, r.out.streamEnd)).toString()).toBe('MZ18ad3ab5a668481ce02b83e7395059f0');
    expect(Buffer.from(r.payload).equals(Buffer.from(payload160, 'base64'))).toBe(true);
  });

  it('reads a Telnyx media frame, numbers unquoted, whitespace between tokens', () => {
    const text = ` { "event" : "media", "sequence_number": 4, "media": { "track": "outbound", "chunk": 2, "timestamp": 20, "payload": "AAEC" }, "stream_id": "32de0dea-53cb-4b21-89a4-9610e1a8bcf0" } `;
    const r = scan(telnyxMediaDialect, text);
    expect(r.ok).toBe(true);
    expect(r.out).toMatchObject({ sequenceNumber: 4, track: 'outbound', chunk: 2, timestampMs: 20, payloadBytes: 3 });
    expect([...r.payload]).toEqual([0, 1, 2]);
  });

  it('leaves everything outside the subset to the full parser', () => {
    const media = `"media":{"chunk":"1","timestamp":"5","payload":"${payload160}"}`;
    for (const text of [
      `{"event":"start","start":{}}`,
      `{"event":"mark","mark":{"name":"x"}}`,
      `{"event":"med\\u0069a",${media}}`, // an escape
      `{"event":"media",${media},"extra":{"a":1}}`, // a nested unknown value
      `{"event":"media",${media},"extra":true}`,
      `{"event":"media","media":{"chunk":"1","timestamp":"5","payload":"${payload160}","chunk":"2"}}`, // a duplicate key
      `{"event":"media",${media}} x`, // trailing bytes
      `{"event":"media","media":{"chunk":-1,"timestamp":"5","payload":"AAAA"}}`,
      `{"event":"media","media":{"chunk":1.0,"timestamp":"5","payload":"AAAA"}}`,
      `{"event":"media","media":{"chunk":01,"timestamp":"5","payload":"AAAA"}}`,
      `{"event":"media","media":{"chunk":"1e300","timestamp":"5","payload":"AAAA"}}`,
      `{"event":"media","media":{"chunk":"9007199254740993","timestamp":"5","payload":"AAAA"}}`,
      `{"event":"media","media":{"chunk":"1","timestamp":"5","payload":"AAA"}}`,
      `{"event":"media","media":{"chunk":"1","timestamp":"5","payload":"A==="}}`,
      `{"event":"media","media":{"chunk":"1","timestamp":"5","payload":""}}`,
      `{"event":"media","media":{"chunk":"1","timestamp":"5"}}`,
      `{"event":"media","media":{"track":"both","chunk":"1","timestamp":"5","payload":"AAAA"}}`,
      `{"event":"media","streamSid":"MZ 1",${media}}`,
      `{"event":"media","media":{"chunk":"1","timestamp":"5","payload":"${'A'.repeat(MAX_MEDIA_PAYLOAD_CHARS + 4)}"}}`, // past the payload bound
    ]) {
      expect(scan(twilioMediaDialect, text).ok, text.slice(0, 80)).toBe(false);
    }
  });
});

describe('json media scan: base64', () => {
  it('decodes like Buffer for every length and padding', () => {
    const rnd = mulberry32(7);
    const out = new Uint8Array(2048);
    for (let n = 1; n <= 300; n++) {
      const bytes = Buffer.from(Array.from({ length: n }, () => Math.floor(rnd() * 256)));
      const b64 = enc(bytes.toString('base64'));
      const got = decodeBase64(b64, 0, b64.length, out);
      expect(got).toBe(n);
      expect(Buffer.from(out.subarray(0, got)).equals(bytes)).toBe(true);
    }
    // Non-zero bits after the last byte are dropped, as Buffer does.
    const loose = enc('AB==');
    expect(decodeBase64(loose, 0, 4, out)).toBe(Buffer.from('AB==', 'base64').length);
    expect(out[0]).toBe(Buffer.from('AB==', 'base64')[0]);
  });
});

// ------------------------------------------------------------------ differential

const pick = <T>(rnd: () => number, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;

function counter(rnd: () => number, v: number): string {
  const r = rnd();
  if (r < 0.45) return `"${v}"`;
  if (r < 0.9) return String(v);
  return pick(rnd, [`"0${v}"`, `${v}.0`, `"-${v}"`, `"${v}x"`, `1e3`, `"99999999999999999"`, `null`]);
}

/** A media frame of the dialect with random order, spacing, optional fields and extra keys. */
function generated(rnd: () => number, d: JsonMediaDialect): string {
  const sp = () => pick(rnd, ['', '', '', ' ', '\n', '\t ']);
  const payloadLen = pick(rnd, [160, 160, 160, 1, 2, 3, 80, 320]);
  const payload = Buffer.from(Array.from({ length: payloadLen }, () => Math.floor(rnd() * 256))).toString('base64');
  const mediaFields = [`"chunk"${sp()}:${sp()}${counter(rnd, Math.floor(rnd() * 5000))}`, `"timestamp":${counter(rnd, Math.floor(rnd() * 100000))}`, `"payload":"${payload}"`];
  if (rnd() < 0.8) mediaFields.push(`"track":"${pick(rnd, ['inbound', 'inbound', 'outbound'])}"`);
  if (rnd() < 0.2) mediaFields.push(`"extra":"x"`);
  const top = [`"event"${sp()}:${sp()}"media"`, `"media":{${sp()}${shuffle(rnd, mediaFields).join(`,${sp()}`)}${sp()}}`];
  if (rnd() < 0.8) top.push(`"${d.sequenceKey}":${counter(rnd, Math.floor(rnd() * 5000))}`);
  if (rnd() < 0.8) top.push(`"${d.streamKey}":"${pick(rnd, ['MZ18ad3ab5a668481ce02b83e7395059f0', '32de0dea-53cb-4b21-89a4-9610e1a8bcf0', 'v2:abc/def=+.x', 'a b'])}"`);
  if (rnd() < 0.2) top.push(`"account":"AC1"`);
  return `${sp()}{${sp()}${shuffle(rnd, top).join(`,${sp()}`)}${sp()}}${sp()}`;
}

function shuffle<T>(rnd: () => number, xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

function mutated(rnd: () => number, text: string): Uint8Array {
  const b = [...enc(text)];
  const edits = 1 + Math.floor(rnd() * 3);
  for (let e = 0; e < edits; e++) {
    const at = Math.floor(rnd() * (b.length + 1));
    const r = rnd();
    const byte = pick(rnd, [0x22, 0x5c, 0x7b, 0x7d, 0x2c, 0x3a, 0x3d, 0x30, 0x41, 0x00, 0x0a, 0xff, 0x2d, 0x2e]);
    if (r < 0.4) b[at] = byte;
    else if (r < 0.7) b.splice(at, 0, byte);
    else if (r < 0.9) b.splice(at, 1);
    else b.length = at;
  }
  return Uint8Array.from(b.filter((x) => x !== undefined));
}

for (const c of DIALECTS) {
  describe(`json media scan vs the full ${c.name} parser`, () => {
    it('accepts only what the full parser accepts, with the same fields and payload', () => {
      const rnd = mulberry32(c.name.length * 1009);
      let accepted = 0;
      let fullMedia = 0;
      for (let i = 0; i < 20_000; i++) {
        const base = generated(rnd, c.dialect);
        const bytes = rnd() < 0.5 ? enc(base) : mutated(rnd, base);
        const r = scan(c.dialect, bytes);
        const full = c.parse(Buffer.from(bytes).toString('utf8'));
        const fullIsMedia = full.ok && full.frame.event === 'media';
        if (fullIsMedia) fullMedia++;
        if (!r.ok) continue;
        accepted++;
        const text = Buffer.from(bytes).toString('utf8');
        expect(fullIsMedia, text).toBe(true);
        const f = (full as { frame: { sequenceNumber?: number; streamSid?: string; track: string; chunk: number; timestampMs: number; payload: string } }).frame;
        expect(r.out.sequenceNumber, text).toBe(f.sequenceNumber ?? -1);
        expect(r.out.streamStart >= 0 ? Buffer.from(bytes.subarray(r.out.streamStart, r.out.streamEnd)).toString() : undefined, text).toBe(f.streamSid);
        expect([r.out.track, r.out.chunk, r.out.timestampMs], text).toEqual([f.track, f.chunk, f.timestampMs]);
        expect(Buffer.from(r.payload).equals(Buffer.from(f.payload, 'base64')), text).toBe(true);
      }
      // The fast path is the common path: it takes most frames the full parser takes as media.
      expect(accepted).toBeGreaterThan(0.6 * fullMedia);
    });
  });
}
