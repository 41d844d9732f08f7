/**
 * Wire-faithful fake of Anthropic's `POST /v1/messages` streaming: named SSE events (`event:` +
 * `data:` whose `type` matches), message_start with input usage, text and tool_use content
 * blocks (input_json_delta fragments), pings, message_delta with stop_reason and cumulative
 * output usage, message_stop. Errors: `{"type":"error","error":{"type","message"}}`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { delay } from './faults.js';
import { HttpFake, type HttpRecord } from './http-fake.js';
import { fragments, scriptReply, textPieces, type ScriptRule } from './script.js';

export interface AnthropicFakeOptions {
  /** Expected `x-api-key`. Default `test-anthropic-key`. */
  apiKey?: string;
  rules?: ScriptRule[];
}

export class AnthropicFake extends HttpFake {
  readonly apiKey: string;
  rules: ScriptRule[];

  constructor(opts: AnthropicFakeOptions = {}) {
    super();
    this.apiKey = opts.apiKey ?? 'test-anthropic-key';
    this.rules = opts.rules ?? [];
  }

  protected async handle(rec: HttpRecord, _req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (rec.headers['x-api-key'] !== this.apiKey) return this.error(rec, res, 401, 'authentication_error', 'invalid x-api-key');
    if (!rec.headers['anthropic-version']) return this.error(rec, res, 400, 'invalid_request_error', 'anthropic-version header is required');
    const f = rec.faults;
    if (f.slowFirstByteMs) await delay(f.slowFirstByteMs);
    if (res.destroyed) return;
    if (f.status429RetryAfterS !== undefined)
      return this.error(rec, res, 429, 'rate_limit_error', 'Number of request tokens has exceeded your rate limit.', {
        'retry-after': String(f.status429RetryAfterS),
      });
    if (f.status500) return this.error(rec, res, 500, 'api_error', 'Internal server error');
    if (rec.method !== 'POST' || rec.path !== '/v1/messages') return this.error(rec, res, 404, 'not_found_error', 'Not found');
    return this.messages(rec, res);
  }

  private error(rec: HttpRecord, res: ServerResponse, status: number, type: string, message: string, headers: Record<string, string> = {}): void {
    this.sendJson(rec, res, status, { type: 'error', error: { type, message } }, headers);
  }

  private async messages(rec: HttpRecord, res: ServerResponse): Promise<void> {
    const body = rec.body as { model?: string; max_tokens?: number; messages?: Array<{ role: string; content: any }>; stream?: boolean };
    if (!body?.model || typeof body.max_tokens !== 'number' || !Array.isArray(body.messages))
      return this.error(rec, res, 400, 'invalid_request_error', 'model, max_tokens and messages are required');
    // Tool results sit in the last user turn as tool_result blocks; the user's words are text.
    const last = body.messages[body.messages.length - 1];
    const blocks = (m: { content: any } | undefined): any[] => (typeof m?.content === 'string' ? [{ type: 'text', text: m.content }] : (m?.content ?? []));
    const toolResults = blocks(last)
      .filter((b) => b.type === 'tool_result')
      .map((b) => String(b.content));
    let lastUserText = '';
    for (const m of [...body.messages].reverse()) {
      const t = blocks(m).find((b) => b.type === 'text');
      if (m.role === 'user' && t) {
        lastUserText = String(t.text);
        break;
      }
    }
    const reply = scriptReply(this.rules, { lastUserText, toolResults }, `toolu_${this.requests.length}_`);

    rec.status = 200;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const send = async (type: string, data: Record<string, unknown>): Promise<boolean> => {
      const ok = this.write(res, `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
      await this.pause();
      return ok;
    };
    const f = rec.faults;
    const inputTokens = JSON.stringify(body.messages).length >> 2;
    await send('message_start', {
      message: {
        id: `msg_${this.requests.length}`, type: 'message', role: 'assistant', content: [], model: body.model,
        stop_reason: null, stop_sequence: null, usage: { input_tokens: inputTokens, output_tokens: 1 },
      },
    });
    await send('ping', {});
    let index = 0;
    let outputTokens = 1;
    if (reply.text) {
      await send('content_block_start', { index, content_block: { type: 'text', text: '' } });
      for (const [n, piece] of textPieces(reply.text).entries()) {
        if (!(await send('content_block_delta', { index, delta: { type: 'text_delta', text: piece } }))) return;
        outputTokens++;
        if (n === 0 && (await this.midStreamFault(res, f))) return;
      }
      await send('content_block_stop', { index });
      index++;
    }
    for (const call of reply.toolCalls) {
      await send('content_block_start', { index, content_block: { type: 'tool_use', id: call.id, name: call.name, input: {} } });
      if (!reply.text && index === 0 && (await this.midStreamFault(res, f))) return;
      for (const piece of fragments(call.arguments, 9))
        if (!(await send('content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: piece } }))) return;
      outputTokens += 3;
      await send('content_block_stop', { index });
      index++;
    }
    await send('message_delta', {
      delta: { stop_reason: reply.toolCalls.length > 0 ? 'tool_use' : 'end_turn', stop_sequence: null },
      usage: { output_tokens: outputTokens },
    });
    await send('message_stop', {});
    res.end();
  }

  private async midStreamFault(res: ServerResponse, f: HttpRecord['faults']): Promise<boolean> {
    if (f.disconnectMidStream) {
      await delay(5);
      res.socket?.destroy();
      return true;
    }
    if (f.malformedChunk) {
      this.write(res, 'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"ty\n\n');
      return false;
    }
    if (f.errorMidStream) {
      this.write(res, `event: error\ndata: ${JSON.stringify({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } })}\n\n`);
      res.end();
      return true;
    }
    return false;
  }
}
