/**
 * Connector tools on a call (issue 18): one LLM function per action of each connector tool in the
 * session config, named `<provider_id>__<action>`, its parameters without the pinned ones. At run
 * time the model's arguments are merged with the pinned (`fixed`) values, whose `{{variable}}`
 * placeholders are filled from the call context, and the action runs through the engine's
 * connector (`CallConnectors`: the same executor as `POST /connectors/execute`, credential read
 * from Postgres at that moment, token refresh included). Like every CallTool it never throws:
 * bad arguments, a missing variable, a disconnected connection, a vendor failure, the timeout and
 * a barge-in all become error results the model reads.
 */
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';
import type { ConnectorActionConfig, ConnectorToolConfig, SessionConfig } from '../../shared/voice/session-config.js';
import type { CallTool } from './call-tools.js';
import type { ToolResult } from './tools.js';

/** The engine's connector, as a call needs it (media-engine/connectors.ts builds the real one). */
export interface CallConnectors {
  /**
   * Runs `action` on the connection, which must belong to `workspaceId`. Resolves with the
   * action's data; rejects with an AppError whose message is safe to show the model (no secret).
   */
  execute(req: { workspaceId: string; connectionId: string; action: string; body: Record<string, unknown> }, signal: AbortSignal): Promise<unknown>;
}

export interface ConnectorToolDeps {
  /** Absent: every connector tool call is an error result (the engine has no database or key). */
  connectors?: CallConnectors;
  clock: Clock;
}

/** What the model reads of an action's data; longer answers are cut (a voice turn needs a few facts). */
export const MAX_CONNECTOR_RESULT_CHARS = 16_000;

export function buildConnectorTools(config: SessionConfig, deps: ConnectorToolDeps): CallTool[] {
  const vars = callVariables(config);
  return (config.connector_tools ?? []).flatMap((tool) =>
    tool.actions.map((action) => ({
      spec: { name: action.name, description: action.description, parameters: action.parameters },
      run: (argsJson: string, signal: AbortSignal) => runConnectorAction(config.workspace_id, tool, action, vars, argsJson, signal, deps),
    })),
  );
}

/**
 * Variables pinned values may use: the session's `dynamic_variables`, then the carrier facts,
 * which win over a dynamic variable of the same name (they come from the carrier, not from
 * whoever started the session): `caller_number` (the other party: the caller of an inbound call,
 * the callee of an outbound one), `agent_number` (our line), `from_number`, `to_number`, plus
 * `call_id`, `session_id`, `agent_id` and `call_direction`.
 */
export function callVariables(config: SessionConfig): Record<string, string> {
  const vars: Record<string, string> = { ...config.dynamic_variables };
  const facts: Record<string, string | undefined> = {
    session_id: config.session_id,
    agent_id: config.agent_id,
    call_direction: config.call_direction,
    call_id: config.call_id,
    from_number: config.from_number,
    to_number: config.to_number,
    caller_number: config.call_direction === 'outbound' ? config.to_number : config.from_number,
    agent_number: config.call_direction === 'outbound' ? config.from_number : config.to_number,
  };
  for (const [k, v] of Object.entries(facts)) if (v) vars[k] = v;
  return vars;
}

const PLACEHOLDER = /\{\{\s*([a-zA-Z0-9_.-]+)\s*(?:\|([^}]*))?\}\}/g;

/**
 * Fills `{{name}}` / `{{name|default}}` in every string of a pinned value (nested objects and
 * arrays too). A variable the call does not have and no default: `missing` names it, and the
 * action is not run (sending an empty or a literal `{{caller_number}}` to a CRM would store junk).
 * Values come out as strings; pin numbers and booleans as JSON values, not placeholders.
 */
export function fillPinned(value: unknown, vars: Record<string, string>): { value: unknown; missing?: string } {
  let missing: string | undefined;
  const fill = (v: unknown): unknown => {
    if (typeof v === 'string') {
      return v.replace(PLACEHOLDER, (_m, key: string, dflt: string | undefined) => {
        const got = Object.hasOwn(vars, key) ? vars[key] : undefined;
        if (got !== undefined && got !== '') return got;
        if (dflt !== undefined) return dflt.trim();
        missing ??= key;
        return '';
      });
    }
    if (Array.isArray(v)) return v.map(fill);
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fill(x)]));
    return v;
  };
  const filled = fill(value);
  return missing === undefined ? { value: filled } : { value: filled, missing };
}

export async function runConnectorAction(
  workspaceId: string,
  tool: ConnectorToolConfig,
  action: ConnectorActionConfig,
  vars: Record<string, string>,
  argsJson: string,
  signal: AbortSignal,
  deps: ConnectorToolDeps,
): Promise<ToolResult> {
  const now = (): number => deps.clock.monotonicMs();
  const started = now();
  const fail = (message: string, attempts = 0): ToolResult => errorResult(message, Math.round(now() - started), attempts);
  let args: Record<string, unknown>;
  try {
    const parsed: unknown = argsJson.trim() ? JSON.parse(argsJson) : {};
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return fail('the arguments must be a JSON object');
    args = parsed as Record<string, unknown>;
  } catch {
    return fail('the model sent arguments that are not JSON');
  }
  const pinned = fillPinned(action.fixed, vars);
  if (pinned.missing) return fail(`this call has no value for {{${pinned.missing}}}, which a pinned parameter of ${action.name} needs`);
  // Pinned values win: the model never saw those parameters and may not override them.
  const body = { ...args, ...(pinned.value as Record<string, unknown>) };
  if (!deps.connectors) return fail('connector tools are not configured on this engine');
  if (signal.aborted) return fail('cancelled');

  const timeout = new AbortController();
  const timer = deps.clock.setTimeout(() => timeout.abort(), tool.timeout_ms);
  const both = AbortSignal.any([signal, timeout.signal]);
  // The executor's own reads are not abortable: the race returns at the bound, the run finishes behind it.
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(new Error('aborted'));
    both.addEventListener('abort', onAbort, { once: true });
  });
  const run = deps.connectors.execute({ workspaceId, connectionId: tool.connection_id, action: action.name, body }, both);
  run.catch(() => undefined);
  aborted.catch(() => undefined);
  try {
    const data = await Promise.race([run, aborted]);
    const { content, output } = bounded(data);
    return { status: 'success', content, output, latencyMs: Math.round(now() - started), attempts: 1 };
  } catch (err) {
    if (timeout.signal.aborted) return fail(`${action.name} timed out after ${tool.timeout_ms} ms`, 1);
    if (signal.aborted) return fail('cancelled', 1);
    return fail(messageOf(err), 1);
  } finally {
    deps.clock.clearTimeout(timer);
    if (onAbort) both.removeEventListener('abort', onAbort);
  }
}

/** The data as the model reads it (and the record keeps): JSON, cut with a marker when too long. */
function bounded(data: unknown): { content: string; output: unknown } {
  const json = JSON.stringify(data ?? null);
  if (json.length <= MAX_CONNECTOR_RESULT_CHARS) return { content: json, output: data ?? null };
  const cut = { truncated: true, partial_json: json.slice(0, MAX_CONNECTOR_RESULT_CHARS) };
  return { content: JSON.stringify(cut), output: cut };
}

/** AppError messages are written for API clients and carry no secret; anything else (logged by the connector) is said plainly. */
function messageOf(err: unknown): string {
  return err instanceof AppError ? err.message.slice(0, 500) : 'the connector failed unexpectedly';
}

function errorResult(message: string, latencyMs: number, attempts: number): ToolResult {
  return { status: 'error', content: JSON.stringify({ error: message }), output: { error: message }, error: message, latencyMs, attempts };
}
