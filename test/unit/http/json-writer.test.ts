/**
 * control-plane/http/json-writer.ts against the library path it replaces
 * (`toJson(create(desc, value))` with the REST options), on every message of the API: random
 * values from each descriptor, edge values (null, undefined, NaN, -0, Infinity, wrong types,
 * message instances, Structs holding values that are not plain JSON) and a known vector.
 */
import { describe, expect, it } from 'vitest';
import { create, fromJson, isMessage, ScalarType, toJson, type DescField, type DescMessage, type DescFile, type JsonObject } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import { mulberry32 } from '../../carrier-sim/prng.js';
import { JSON_WRITE, withNulls, writeJson, writerFor } from '../../../control-plane/http/json-writer.js';
import { ConversationSchema, ListConversationsResponseSchema } from '../../../shared/gen/voiceplane/v1/conversations_pb.js';
import * as accounts from '../../../shared/gen/voiceplane/v1/accounts_pb.js';
import * as agents from '../../../shared/gen/voiceplane/v1/agents_pb.js';
import * as alerts from '../../../shared/gen/voiceplane/v1/alerts_pb.js';
import * as analysis from '../../../shared/gen/voiceplane/v1/analysis_pb.js';
import * as analytics from '../../../shared/gen/voiceplane/v1/analytics_pb.js';
import * as billing from '../../../shared/gen/voiceplane/v1/billing_pb.js';
import * as campaigns from '../../../shared/gen/voiceplane/v1/campaigns_pb.js';
import * as common from '../../../shared/gen/voiceplane/v1/common_pb.js';
import * as connectors from '../../../shared/gen/voiceplane/v1/connectors_pb.js';
import * as conversations from '../../../shared/gen/voiceplane/v1/conversations_pb.js';
import * as health from '../../../shared/gen/voiceplane/v1/health_pb.js';
import * as portal from '../../../shared/gen/voiceplane/v1/portal_pb.js';
import * as providers from '../../../shared/gen/voiceplane/v1/providers_pb.js';
import * as qa from '../../../shared/gen/voiceplane/v1/qa_pb.js';
import * as simtests from '../../../shared/gen/voiceplane/v1/simtests_pb.js';
import * as systemAnalytics from '../../../shared/gen/voiceplane/v1/system_analytics_pb.js';
import * as telephony from '../../../shared/gen/voiceplane/v1/telephony_pb.js';
import * as voice from '../../../shared/gen/voiceplane/v1/voice_pb.js';
import * as webhooks from '../../../shared/gen/voiceplane/v1/webhooks_pb.js';

const MODULES = [accounts, agents, alerts, analysis, analytics, billing, campaigns, common, connectors, conversations, health, portal, providers, qa, simtests, systemAnalytics, telephony, voice, webhooks];

/** Every message type of the API (top-level and nested), once. */
function allMessages(): DescMessage[] {
  const seen = new Map<string, DescMessage>();
  const visit = (d: DescMessage) => {
    if (seen.has(d.typeName)) return;
    seen.set(d.typeName, d);
    for (const n of d.nestedMessages) visit(n);
  };
  for (const m of MODULES) {
    for (const v of Object.values(m)) {
      const file = v as DescFile;
      if (v && typeof v === 'object' && 'kind' in v && file.kind === 'file') for (const d of file.messages) visit(d);
    }
  }
  return [...seen.values()];
}

const rng = mulberry32;

const STRINGS = ['', 'a', 'ünïcødé', 'line\nbreak "quoted" \\ slash', '\u2028', '😀', '0', 'null'];
const NUMBERS = [0, -0, 1, -1, 3.5, 2147483647, -2147483648, 1e21, 5e-324, NaN, Infinity, -Infinity];

function jsonValue(r: () => number, depth: number, allowBad: boolean): unknown {
  const k = Math.floor(r() * (depth > 2 ? 5 : 8));
  switch (k) {
    case 0:
      return null;
    case 1:
      return pick(r, STRINGS);
    case 2:
      return r() < 0.5;
    case 3: {
      const n = pick(r, NUMBERS);
      return allowBad || Number.isFinite(n) ? n : 1.25;
    }
    case 4:
      return allowBad && r() < 0.3 ? undefined : 'x';
    case 5:
    case 6:
      return Array.from({ length: Math.floor(r() * 3) }, () => jsonValue(r, depth + 1, allowBad));
    default: {
      const o: Record<string, unknown> = {};
      for (let i = 0; i < Math.floor(r() * 4); i++) o[pick(r, ['a', 'b', 'z', '1', '10', 'key with space'])] = jsonValue(r, depth + 1, allowBad);
      return o;
    }
  }
}

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)]!;
}

function scalar(r: () => number, t: ScalarType, wrong: boolean): unknown {
  if (wrong && r() < 0.05) return pick(r, [1, 'x', true, {}, [], 10n] as const);
  switch (t) {
    case ScalarType.STRING:
      return pick(r, STRINGS);
    case ScalarType.BOOL:
      return r() < 0.5;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return pick(r, NUMBERS);
    default:
      return pick(r, [0, -0, 1, -5, 3.5, 2147483647, -2147483648]);
  }
}

/** A random init-shaped value for `desc` (as a handler could return). */
function initFor(desc: DescMessage, r: () => number, depth: number, wrong: boolean): Record<string, unknown> {
  const o: Record<string, unknown> = {};
  if (r() < 0.2) o.unknownExtra = 'ignored';
  for (const f of desc.fields) {
    const roll = r();
    if (roll < 0.15) continue; // absent
    if (roll < 0.2) {
      o[f.localName] = null;
      continue;
    }
    if (roll < 0.22) {
      o[f.localName] = undefined;
      continue;
    }
    o[f.localName] = fieldValue(f, r, depth, wrong);
  }
  return o;
}

function fieldValue(f: DescField, r: () => number, depth: number, wrong: boolean): unknown {
  switch (f.fieldKind) {
    case 'scalar':
      return scalar(r, f.scalar, wrong);
    case 'message':
      return messageValue(f.message, r, depth, wrong);
    case 'list':
      if (wrong && r() < 0.03) return 'not a list';
      return Array.from({ length: Math.floor(r() * 3) }, () =>
        f.listKind === 'scalar' ? scalar(r, f.scalar, wrong) : f.listKind === 'message' ? (wrong && r() < 0.03 ? null : messageValue(f.message, r, depth, wrong)) : 0,
      );
    case 'map': {
      const m: Record<string, unknown> = {};
      for (let i = 0; i < Math.floor(r() * 3); i++) m[pick(r, ['k', 'x-y', '2'])] = f.mapKind === 'scalar' ? scalar(r, f.scalar, wrong) : {};
      return m;
    }
    default:
      return 0;
  }
}

function messageValue(d: DescMessage, r: () => number, depth: number, wrong: boolean): unknown {
  if (d.typeName === 'google.protobuf.Struct') {
    // A handler's Struct is a JSON object; a test of odd values also tries others (the library
    // writes `{}` for them) and values inside that are not JSON (NaN, undefined).
    if (wrong && r() < 0.1) return jsonValue(r, 3, true);
    const o: Record<string, unknown> = {};
    for (let i = 0; i < 1 + Math.floor(r() * 3); i++) o[pick(r, ['a', 'b', '1', 'x y'])] = jsonValue(r, 1, wrong && r() < 0.5);
    return o;
  }
  if (d.typeName === 'google.protobuf.Value') return fromJson(ValueSchema, (jsonValue(r, 1, false) ?? null) as never);
  if (depth > 3) return {};
  const init = initFor(d, r, depth + 1, wrong);
  // Handlers sometimes hold messages: the library keeps those as they are.
  return r() < 0.15 && !wrong ? create(d, init as never) : init;
}

function viaLibrary(desc: DescMessage, value: object): { json?: string; error?: string } {
  try {
    // The library's proto3 JSON, plus the nulls of the records the spec lists (NULL_WHEN_UNSET).
    return { json: JSON.stringify(withNulls(desc, toJson(desc, create(desc, value as never), JSON_WRITE) as JsonObject)) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

function viaWriter(desc: DescMessage, value: object): { json?: string; error?: string } {
  try {
    return { json: JSON.stringify(writeJson(desc, value)) };
  } catch (e) {
    return { error: (e as Error).message };
  }
}

describe('REST JSON writer', () => {
  const messages = allMessages();

  it('compiles every message type of the API but the one with a bytes field', () => {
    expect(messages.length).toBeGreaterThan(200);
    const notCompiled = messages.filter((d) => !writerFor(d)).map((d) => d.typeName);
    // Uncompiled types (and their parents) take the library path: correct, only slower.
    for (const name of notCompiled) {
      const d = messages.find((m) => m.typeName === name)!;
      const reasons = d.fields.filter(
        (f) =>
          (f.fieldKind === 'scalar' && (f.scalar === ScalarType.BYTES || f.scalar === ScalarType.INT64)) ||
          f.fieldKind === 'enum' ||
          f.oneof ||
          (f.fieldKind === 'message' && !writerFor(f.message) && !f.message.typeName.startsWith('google.protobuf.')) ||
          // A recursive type (SystemHealthRecord's `processes`), and a list of one.
          (f.fieldKind === 'list' && f.listKind === 'message' && (f.message === d || !writerFor(f.message))),
      );
      expect(reasons.length, name).toBeGreaterThan(0);
    }
    expect(notCompiled.length).toBeLessThan(5);
  });

  it('writes what the library writes, for random values of every message type', () => {
    const r = rng(13);
    let fast = 0;
    let total = 0;
    for (const desc of messages) {
      for (let i = 0; i < 40; i++) {
        const value = initFor(desc, r, 0, false);
        expect(viaWriter(desc, value), desc.typeName).toEqual(viaLibrary(desc, value));
        total++;
        if (writerFor(desc)?.(value) !== undefined) fast++;
      }
    }
    // Values of the right types take the fast path, except Structs holding non-plain JSON (rare here).
    expect(fast / total).toBeGreaterThan(0.9);
  });

  it('gives up to the library (same JSON or the same error) on wrong types and odd values', () => {
    const r = rng(7);
    let errors = 0;
    for (const desc of messages) {
      for (let i = 0; i < 40; i++) {
        const value = initFor(desc, r, 0, true);
        const want = viaLibrary(desc, value);
        if (want.error) errors++;
        expect(viaWriter(desc, value), desc.typeName).toEqual(want);
      }
    }
    expect(errors).toBeGreaterThan(50);
  });

  it('a message instance at the top is the library\'s to write', () => {
    const msg = create(ConversationSchema, { id: 'c1', metadata: { a: 1 } });
    expect(isMessage(msg)).toBe(true);
    expect(viaWriter(ConversationSchema, msg)).toEqual(viaLibrary(ConversationSchema, msg));
  });

  it('known vector: a folded conversation list page', () => {
    const value = {
      conversations: [
        { id: 'c1', sessionId: 's1', agentId: 'a1', workspaceId: 'w1', status: 'completed', totalTurns: 3, totalDurationMs: 5000, avgResponseLatencyMs: 420, summary: undefined, metadata: { source: 'web', tags: ['x'], n: -0 }, startedAt: '2026-11-28T10:00:00.000Z', endedAt: '2026-11-28T10:01:00.000Z', createdAt: 'c', updatedAt: 'u', callId: 'call-1', sessionCount: 2, segmentCount: 2, segmentPattern: 'ai -> human' },
      ],
      meta: { total: 1, limit: 20, offset: 0, hasMore: false },
    };
    const json = JSON.stringify(writeJson(ListConversationsResponseSchema, value));
    expect(json).toBe(viaLibrary(ListConversationsResponseSchema, value).json);
    expect(json.startsWith('{"conversations":[{"id":"c1","session_id":"s1","user_id":"","agent_id":"a1","workspace_id":"w1","status":"completed","total_turns":3,')).toBe(true);
    expect(json).toContain('"metadata":{"source":"web","tags":["x"],"n":0},"started_at"');
    // The spec's record fields are all present: an unset one is null (NULL_WHEN_UNSET).
    expect(json).toContain('"summary":null');
  });

  it('known vector: single fields the spec lists unconditionally are null when unset, the conditional ones left out', () => {
    const row = { id: 'r1', agentId: 'a1', displayName: 'Ana', agentCode: 'ana', date: '2026-12-01' };
    const json = writeJson(portal.AttendanceRowSchema, row);
    expect(json).toMatchObject({ first_login: null, last_logout: null });
    expect(Object.keys(json)).not.toContain('scheduled_start');
    expect(JSON.stringify(json)).toBe(viaLibrary(portal.AttendanceRowSchema, row).json);
    const health = writeJson(systemAnalytics.SystemHealthRecordSchema, { serviceName: 'media-engine', nodeId: 'n', status: 'healthy' });
    expect(health).toMatchObject({ avg_response_ms: null, processes: [] });
  });

  it('known vector: a ledger entry without usage has usage null; a type outside NULL_WHEN_UNSET leaves an unset message out', () => {
    const entry = { id: 'e1', workspaceId: 'w1', kind: 'top_up', amountMicros: 50, reference: 'r', createdAt: 't' };
    const json = JSON.stringify(writeJson(billing.LedgerEntrySchema, entry));
    expect(json).toBe('{"id":"e1","workspace_id":"w1","kind":"top_up","amount_micros":50,"conversation_id":"","reference":"r","note":"","usage":null,"created_at":"t"}');
    expect(json).toBe(viaLibrary(billing.LedgerEntrySchema, entry).json);
    expect(writeJson(billing.CreditResultSchema, { balanceMicros: 1, replayed: false })).toEqual({ balance_micros: 1, replayed: false });
  });
});
