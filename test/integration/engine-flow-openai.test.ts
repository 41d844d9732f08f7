/**
 * A real call in flow mode through the OpenAI-compatible adapter against the wire-faithful fake
 * (issue 19, "Done means" 2), with knowledge search on real Postgres: the browser caller talks
 * over a real socket; the fake's recorded Chat Completions bodies show each node's instructions in
 * the system message and that node's transition functions in `tools`; `flow_node_entered` arrives
 * on the socket; `search_knowledge` runs the Postgres search and is reported as a tool call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { createSql, type Sql } from '../../shared/db/client.js';
import { newId } from '../../shared/ids.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { migrate } from '../../control-plane/db/migrate.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { createPgKnowledgeSearch } from '../../media-engine/knowledge/search.js';
import { OpenAiFake } from '../fakes/openai.js';
import { captureLogger, dropSchema, TEST_DATABASE_URL, TEST_OUTBOUND_ALLOW_CIDRS, uniqueName } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { VoiceClient, type ReceivedEvent } from '../helpers/voice-client.js';
import { BOOKING_FLOW } from '../fixtures/flows/booking.js';
import { BISTRO_ENTRIES } from '../fixtures/knowledge/bistro-faq.js';

const schema = uniqueName('t_flow');
let sql: Sql;
let registry: MemoryRegistry;
let node: EngineNode;
let openai: OpenAiFake;
const clients: VoiceClient[] = [];
const ws = newId();
const itemIds: string[] = [];

beforeAll(async () => {
  sql = createSql(TEST_DATABASE_URL, { schema, max: 4 });
  await sql.unsafe(`create schema if not exists "${schema}"`);
  await migrate(sql);
  const user = newId();
  await sql`insert into users (id, email, password_hash) values (${user}, ${`${user}@flow.test`}, 'x')`;
  await sql`insert into workspaces (id, user_id, name) values (${ws}, ${user}, 'flow')`;
  for (const e of BISTRO_ENTRIES) {
    const id = newId();
    await sql`insert into memory_items (id, workspace_id, title, content) values (${id}, ${ws}, ${e.title}, ${e.content})`;
    itemIds.push(id);
  }
  openai = new OpenAiFake({
    rules: [
      { match: 'book a table', toolCalls: [{ name: 'go_to_collect', arguments: {} }], afterTools: 'Sure. For which date, and for how many people?' },
      { match: 'cancel', toolCalls: [{ name: 'search_knowledge', arguments: { query: 'cancel a booking late' } }], afterTools: 'Cancelling is free until a day before.' },
      { match: 'tomorrow', toolCalls: [{ name: 'set_variables', arguments: { date: 'tomorrow', party_size: 2 } }, { name: 'go_to_confirm', arguments: {} }], afterTools: 'A table for two tomorrow, right?' },
    ],
  });
  await openai.start();
  registry = new MemoryRegistry();
  node = await startEngineNode({
    config: loadConfig({ OUTBOUND_ALLOW_CIDRS: TEST_OUTBOUND_ALLOW_CIDRS }, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, maxSockets: 20 }),
    logger: captureLogger('warn').logger,
    clock: realClock,
    registry,
    port: 0,
    knowledge: createPgKnowledgeSearch(sql),
  });
}, 30_000);

afterAll(async () => {
  for (const c of clients) c.close();
  await node?.close();
  await registry?.close();
  await openai?.close();
  await sql?.end({ timeout: 5 });
  await dropSchema(schema);
});

async function connect(overrides: Partial<SessionConfig>): Promise<VoiceClient> {
  const cfg = sessionConfig({
    workspace_id: ws,
    providers: {
      asr: { provider_name: 'sim' },
      llm: { provider_name: 'openai_compatible', api_key: openai.apiKey, base_url: `${openai.url}/v1`, model_name: 'local-model' },
      tts: { provider_name: 'sim' },
    },
    ...overrides,
  });
  await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
  const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}?profile=browser_headset`);
  clients.push(c);
  await c.waitForType('pipeline_ready', 10_000);
  return c;
}

async function turn(c: VoiceClient, text: string, n: number): Promise<ReceivedEvent> {
  c.sendJson({ type: 'text_inject', text, role: 'user' });
  return c.waitFor((e) => e.type === 'turn_complete' && e.turn === n, 20_000);
}

interface ChatBody {
  temperature?: number;
  messages: Array<{ role: string; content: string | null }>;
  tools?: Array<{ type: string; function: { name: string; description: string; parameters: Record<string, unknown> } }>;
}

const chatBodies = () => openai.requests.filter((r) => r.path === '/v1/chat/completions').map((r) => r.body as ChatBody);
const toolNames = (b: ChatBody) => (b.tools ?? []).map((t) => t.function.name);

describe('a flow call through the OpenAI-compatible adapter', () => {
  it("each request carries its node's instructions and its transition functions; knowledge search is a tool call", async () => {
    const before = chatBodies().length;
    const c = await connect({
      flow: BOOKING_FLOW,
      system_prompt: 'You take table bookings for Chez Test.',
      knowledge_search: { item_ids: itemIds, text_search_config: 'english' },
    });
    await c.waitFor((e) => e.type === 'flow_node_entered' && e.node_id === 'greet', 5000);

    await turn(c, 'Hello, I would like to book a table', 1);
    const [greet, collect] = chatBodies().slice(before);
    expect(greet!.messages[0]).toMatchObject({ role: 'system' });
    expect(greet!.messages[0]!.content).toContain('You take table bookings for Chez Test.');
    expect(greet!.messages[0]!.content).toContain('## Current step: Greet\n\nGreet the caller and ask how you can help.');
    expect(toolNames(greet!)).toEqual(['search_knowledge', 'set_variables', 'go_to_collect']);
    const goTo = greet!.tools!.find((t) => t.function.name === 'go_to_collect')!;
    expect(goTo).toMatchObject({ type: 'function', function: { description: 'the caller wants to book a table' } });
    // The model's transition moved the call: the next request of the same turn is in collect.
    expect(collect!.messages[0]!.content).toContain('## Current step: Collect booking');
    expect(toolNames(collect!)).toEqual(['search_knowledge', 'set_variables', 'go_to_confirm']);
    expect([greet!.temperature, collect!.temperature]).toEqual([undefined, 0.2]);
    const entered = await c.waitFor((e) => e.type === 'flow_node_entered' && e.node_id === 'collect', 5000);
    expect(entered).toMatchObject({ label: 'Collect booking', node_type: 'prompt', turn: 1 });

    // A knowledge question in the middle of the node: the search runs on Postgres, the call stays in collect.
    const from = c.events.length;
    await turn(c, 'What if I need to cancel?', 2);
    const result = c.events.slice(from).find((e) => e.type === 'tool_call_result')!;
    expect(result).toMatchObject({ tool_name: 'search_knowledge' });
    expect(String(result.result)).toContain('Cancellation policy');
    const afterSearch = chatBodies().at(-1)!;
    expect(afterSearch.messages.at(-1)).toMatchObject({ role: 'tool' });
    expect(afterSearch.messages.at(-1)!.content).toContain('Late cancellations and no-shows are charged');
    expect(afterSearch.messages[0]!.content).toContain('## Current step: Collect booking');

    await turn(c, 'Tomorrow, two of us', 3);
    const confirm = chatBodies().at(-1)!;
    expect(confirm.messages[0]!.content).toContain('Read back: a table for 2 on tomorrow.');
    expect(toolNames(confirm)).toEqual(['search_knowledge', 'set_variables', 'go_to_end']);
    expect(c.events.filter((e) => e.type === 'flow_node_entered').map((e) => e.node_id)).toEqual(['greet', 'collect', 'confirm']);
  }, 60_000);
});
