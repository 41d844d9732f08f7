/**
 * Shared support for the agents / providers suites (integration tests import it too): a control
 * plane on real Postgres + Redis, a small REST client, and Struct conversion for the raw
 * @grpc/grpc-js client (proto-loader hands google.protobuf.Struct over as `{fields: {...}}`).
 */
import { randomBytes } from 'node:crypto';
import { startControlPlane, type ControlPlane } from '../../../control-plane/app.js';
import { api, createTestUser, type ApiResponse, type TestUser } from '../../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../../helpers/infra.js';

export interface AgentsApp {
  infra: TestInfra;
  app: ControlPlane;
  port: number;
  orgKey: string;
  /** The same key, under the name `readCode` looks for. */
  orgApiKey: string;
  /** The in-process mailbox (`readCode`). */
  accounts: ControlPlane['accounts'];
  close(): Promise<void>;
}

export async function startAgentsApp(): Promise<AgentsApp> {
  const orgKey = `org_${randomBytes(18).toString('hex')}`;
  const infra = await startTestInfra({ orgApiKey: orgKey });
  const app = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  return {
    infra,
    app,
    port: app.port,
    orgKey,
    orgApiKey: orgKey,
    accounts: app.accounts,
    async close() {
      await app.close();
      await infra.close();
    },
  };
}

export type Call = (method: string, path: string, token?: string, body?: unknown) => Promise<ApiResponse>;

/** REST under /api/v1; every response body is kept so tests can scan them for secrets. */
export function restClient(app: { port: number }, seen: string[] = []): Call {
  return async (method, path, token, body) => {
    const res = await api(app, method, `/api/v1${path}`, { token, body });
    seen.push(typeof res.body === 'string' ? res.body : JSON.stringify(res.body));
    return res;
  };
}

export { createTestUser, type TestUser };

/** Adds `email` to a workspace with a role (owner's token). */
export async function addMember(app: { port: number }, ownerToken: string, workspaceId: string, email: string, role: string): Promise<void> {
  const res = await api(app, 'POST', `/api/v1/auth/workspaces/${workspaceId}/members`, { token: ownerToken, body: { email, role } });
  if (res.status >= 300) throw new Error(`add member: ${res.status} ${JSON.stringify(res.body)}`);
}

export async function createMemoryItem(app: { port: number }, token: string, workspaceId: string, title: string, content: string): Promise<string> {
  const res = await api(app, 'POST', `/api/v1/auth/workspaces/${workspaceId}/memory`, { token, body: { title, content } });
  if (res.status >= 300) throw new Error(`memory: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.data.id;
}

// google.protobuf.Struct <-> plain JSON for the raw grpc-js client.
type PbValue = Record<string, unknown>;

export function toPbValue(v: unknown): PbValue {
  if (v === null || v === undefined) return { nullValue: 'NULL_VALUE' };
  if (typeof v === 'string') return { stringValue: v };
  if (typeof v === 'number') return { numberValue: v };
  if (typeof v === 'boolean') return { boolValue: v };
  if (Array.isArray(v)) return { listValue: { values: v.map(toPbValue) } };
  return { structValue: toStruct(v as Record<string, unknown>) };
}

export function toStruct(o: Record<string, unknown>): { fields: Record<string, PbValue> } {
  return { fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, toPbValue(v)])) };
}

export function fromPbValue(v: PbValue | null | undefined): unknown {
  if (!v) return null;
  const kind = (v.kind as string | undefined) ?? Object.keys(v).find((k) => k.endsWith('Value') || k.endsWith('_value'));
  const val = kind ? v[kind] : undefined;
  switch (kind) {
    case 'stringValue':
    case 'string_value':
    case 'numberValue':
    case 'number_value':
    case 'boolValue':
    case 'bool_value':
      return val;
    case 'structValue':
    case 'struct_value':
      return fromStruct(val as { fields: Record<string, PbValue> });
    case 'listValue':
    case 'list_value':
      return ((val as { values: PbValue[] }).values ?? []).map(fromPbValue);
    default:
      return null;
  }
}

export function fromStruct(s: { fields?: Record<string, PbValue> } | null | undefined): Record<string, unknown> {
  return Object.fromEntries(Object.entries(s?.fields ?? {}).map(([k, v]) => [k, fromPbValue(v)]));
}

/** Every string in `secrets` that occurs in `haystack` (should be none). */
export function leaked(haystack: string[], secrets: string[]): string[] {
  const all = haystack.join('\n');
  return secrets.filter((s) => all.includes(s));
}

/** A 400 INVALID_REQUEST whose details name `field`. */
export function expectInvalid(res: ApiResponse, field: string): void {
  const detail = { status: res.status, body: res.body, field };
  if (res.status !== 400 || res.body?.error?.code !== 'INVALID_REQUEST' || res.body?.error?.details?.[0]?.field !== field) {
    throw new Error(`expected 400 INVALID_REQUEST naming ${field}: ${JSON.stringify(detail)}`);
  }
}

/** Status plus envelope error code. */
export function expectError(res: ApiResponse, status: number, code: string): void {
  if (res.status !== status || res.body?.error?.code !== code || res.body?.success !== false) {
    throw new Error(`expected ${status} ${code}: got ${res.status} ${JSON.stringify(res.body)}`);
  }
}
