/**
 * Wire-faithful fake of the OpenAI API (docs/protocols.md sections 6 and 7):
 * - `POST /v1/chat/completions` streaming SSE chunks (`data: <json>` + blank line, `: comment`
 *   keep-alives, tool-call fragments by index, finish chunk, usage chunk, `data: [DONE]`);
 * - `POST /v1/audio/speech` with `response_format:'pcm'`: 24 kHz S16LE, sim-coded so the sim
 *   decoder can read the text back, streamed in odd-sized chunks (samples split across chunks);
 * - `POST /v1/audio/transcriptions`: multipart/form-data (`file` a 16-bit PCM mono WAV, `model`,
 *   optional `language`, `response_format` json|text); the WAV is checked (RIFF header, sizes) and
 *   "transcribed" by reading the sim audio code in it (or `transcript` when set): `{text}`;
 * - error bodies `{"error":{message,type,param,code}}`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import busboy from 'busboy';
import { parseWav } from '../../shared/providers/audio/wav.js';
import { SimDecoder } from '../../shared/providers/sim/codec.js';
import { encodeText } from '../../shared/providers/sim/codec.js';
import { int16ToBytes } from '../../shared/providers/tts/pcm-bytes.js';
import { delay } from './faults.js';
import { HttpFake, type HttpRecord } from './http-fake.js';
import { fragments, scriptReply, textPieces, type ScriptRule } from './script.js';

export interface OpenAiFakeOptions {
  /** Expected bearer key; requests without it get 401 `invalid_api_key`. Default `test-openai-key`. */
  apiKey?: string;
  rules?: ScriptRule[];
  /** Send `choices: null` on the usage chunk, like some compatible servers. Default false. */
  usageChoicesNull?: boolean;
  /** Bytes per streamed speech chunk; odd on purpose. Default 4801. */
  speechChunkBytes?: number;
  /** Answer speech as a WAV file at this rate (some OpenAI-compatible servers do, `pcm` asked or not). */
  speechWavRateHz?: number;
}

/** What the fake read from one transcription upload. */
export interface TranscriptionUpload {
  fields: Record<string, string>;
  filename?: string;
  contentType?: string;
  sampleRateHz: number;
  samples: number;
}

export class OpenAiFake extends HttpFake {
  readonly apiKey: string;
  rules: ScriptRule[];
  /** Fixed transcription text; unset: the sim code read from the uploaded audio. */
  transcript?: string;
  readonly uploads: TranscriptionUpload[] = [];

  constructor(private readonly opts: OpenAiFakeOptions = {}) {
    super();
    this.apiKey = opts.apiKey ?? 'test-openai-key';
    this.rules = opts.rules ?? [];
  }

  protected async handle(rec: HttpRecord, _req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (rec.headers.authorization !== `Bearer ${this.apiKey}`)
      // Vendors echo what they were sent (OpenAI shows the key, partly masked): the adapters must not pass it on.
      return this.error(rec, res, 401, `Incorrect API key provided: ${String(rec.headers.authorization ?? '').replace(/^Bearer /, '')}.`, 'invalid_request_error', 'invalid_api_key');
    const f = rec.faults;
    if (f.slowFirstByteMs) await delay(f.slowFirstByteMs);
    if (res.destroyed) return;
    if (f.status429RetryAfterS !== undefined)
      return this.error(rec, res, 429, 'Rate limit reached for requests.', 'requests', 'rate_limit_exceeded', {
        'retry-after': String(f.status429RetryAfterS),
      });
    if (f.status500) return this.error(rec, res, 500, 'The server had an error while processing your request.', 'server_error', null);
    if (rec.method === 'POST' && rec.path === '/v1/chat/completions') return this.chat(rec, res);
    if (rec.method === 'POST' && rec.path === '/v1/audio/speech') return this.speech(rec, res);
    if (rec.method === 'POST' && rec.path === '/v1/audio/transcriptions') return this.transcription(rec, res);
    return this.error(rec, res, 404, `Unknown request URL: ${rec.method} ${rec.path}`, 'invalid_request_error', 'unknown_url');
  }

  private error(
    rec: HttpRecord,
    res: ServerResponse,
    status: number,
    message: string,
    type: string,
    code: string | null,
    headers: Record<string, string> = {},
  ): void {
    this.sendJson(rec, res, status, { error: { message, type, param: null, code } }, headers);
  }

  private async chat(rec: HttpRecord, res: ServerResponse): Promise<void> {
    const body = rec.body as { model?: string; messages?: Array<Record<string, any>>; stream?: boolean; stream_options?: { include_usage?: boolean } };
    if (!body?.model || !Array.isArray(body.messages))
      return this.error(rec, res, 400, "Missing required parameter: 'messages'.", 'invalid_request_error', 'missing_required_parameter');
    const msgs = body.messages;
    const toolResults: string[] = [];
    for (let i = msgs.length - 1; i >= 0 && msgs[i]!.role === 'tool'; i--) toolResults.unshift(String(msgs[i]!.content));
    const lastUser = [...msgs].reverse().find((m) => m.role === 'user');
    const reply = scriptReply(this.rules, { lastUserText: String(lastUser?.content ?? ''), toolResults }, `call_${this.requests.length}_`);

    rec.status = 200;
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const base = { id: `chatcmpl-${this.requests.length}`, object: 'chat.completion.chunk', created: 1, model: body.model };
    const send = async (choices: unknown[] | null, usage: unknown = null): Promise<boolean> => {
      const ok = this.write(res, `data: ${JSON.stringify({ ...base, choices, usage })}\n\n`);
      await this.pause();
      return ok;
    };
    const delta = (d: Record<string, unknown>, finish: string | null = null): unknown[] => [
      { index: 0, delta: d, logprobs: null, finish_reason: finish },
    ];
    const f = rec.faults;

    this.write(res, ': keep-alive\n\n'); // comment lines must be ignored by clients
    if (!(await send(delta({ role: 'assistant', content: '' })))) return;
    let sent = 0;
    for (const piece of textPieces(reply.text)) {
      if (!(await send(delta({ content: piece })))) return;
      sent++;
      if (sent === 1 && (await this.midStreamFault(res, f))) return;
    }
    for (const [index, call] of reply.toolCalls.entries()) {
      const first = { index, id: call.id, type: 'function', function: { name: call.name, arguments: '' } };
      if (!(await send(delta({ tool_calls: [first] })))) return;
      if (sent++ === 0 && (await this.midStreamFault(res, f))) return;
      for (const piece of fragments(call.arguments, 7))
        if (!(await send(delta({ tool_calls: [{ index, function: { arguments: piece } }] })))) return;
    }
    if (sent === 0 && (await this.midStreamFault(res, f))) return;
    await send(delta({}, reply.toolCalls.length > 0 ? 'tool_calls' : 'stop'));
    if (body.stream_options?.include_usage) {
      const prompt = JSON.stringify(msgs).length >> 2;
      const completion = Math.max(1, (reply.text.length + JSON.stringify(reply.toolCalls).length) >> 2);
      await send(this.opts.usageChoicesNull ? null : [], { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion });
    }
    this.write(res, 'data: [DONE]\n\n');
    await this.pause(); // the body's end arrives after [DONE], as from a real server's separate write
    res.end();
  }

  /** Applies a mid-stream fault after the first content chunk; true when the stream is over. */
  private async midStreamFault(res: ServerResponse, f: HttpRecord['faults']): Promise<boolean> {
    if (f.disconnectMidStream) {
      await delay(5); // let the first chunk reach the client before the cut
      res.socket?.destroy();
      return true;
    }
    if (f.malformedChunk) {
      this.write(res, 'data: {"id":"chatcmpl-x","object":"chat.completion.chunk","choices":[{"delta":{"content":"oo\n\n');
      await this.pause();
      return false; // keep streaming: the client must fail on its own
    }
    if (f.errorMidStream) {
      this.write(res, `data: ${JSON.stringify({ error: { message: 'The server had an error while processing your request.', type: 'server_error', param: null, code: null } })}\n\n`);
      res.end();
      return true;
    }
    return false;
  }

  private async speech(rec: HttpRecord, res: ServerResponse): Promise<void> {
    const body = rec.body as { model?: string; input?: string; voice?: string; response_format?: string };
    if (!body?.input || !body.voice || !body.model)
      return this.error(rec, res, 400, "Missing required parameter: 'input'.", 'invalid_request_error', 'missing_required_parameter');
    if (body.response_format !== 'pcm')
      return this.error(rec, res, 400, 'the fake only speaks pcm', 'invalid_request_error', 'unsupported_format');
    const wavRate = this.opts.speechWavRateHz;
    const pcm = int16ToBytes(encodeText(body.input, (wavRate ?? 24000) as 24000));
    const audio = wavRate ? Buffer.concat([wavHeader(wavRate), pcm]) : pcm;
    rec.status = 200;
    res.writeHead(200, { 'content-type': 'audio/pcm', 'transfer-encoding': 'chunked' });
    const size = this.opts.speechChunkBytes ?? 4801;
    for (let off = 0, n = 0; off < audio.length; off += size, n++) {
      if (!this.write(res, audio.subarray(off, off + size))) return;
      if (n === 0 && rec.faults.disconnectMidStream) {
        await delay(5);
        res.socket?.destroy();
        return;
      }
      await this.pause();
    }
    res.end();
  }

  private async transcription(rec: HttpRecord, res: ServerResponse): Promise<void> {
    const fields: Record<string, string> = {};
    let file: { bytes: Buffer; filename: string; mimeType: string } | undefined;
    try {
      await new Promise<void>((resolve, reject) => {
        const bb = busboy({ headers: rec.headers, limits: { fileSize: 25 * 1024 * 1024, files: 1, fields: 20 } });
        bb.on('field', (name, value) => (fields[name] = value));
        bb.on('file', (name, stream, info) => {
          const parts: Buffer[] = [];
          stream.on('data', (d: Buffer) => parts.push(d));
          stream.on('end', () => {
            if (name === 'file') file = { bytes: Buffer.concat(parts), filename: info.filename ?? '', mimeType: info.mimeType ?? '' };
          });
        });
        bb.on('close', resolve);
        bb.on('error', reject);
        bb.end(rec.rawBytes);
      });
    } catch (e) {
      return this.error(rec, res, 400, `Could not parse multipart form: ${(e as Error).message}`, 'invalid_request_error', null);
    }
    const upload = file as { bytes: Buffer; filename: string; mimeType: string } | undefined;
    if (!upload) return this.error(rec, res, 400, "Missing required parameter: 'file'.", 'invalid_request_error', 'missing_required_parameter');
    file = upload;
    if (!fields.model) return this.error(rec, res, 400, "Missing required parameter: 'model'.", 'invalid_request_error', 'missing_required_parameter');
    let wav;
    try {
      // The header must be right: RIFF size = file - 8, data size = what follows the header.
      const v = new DataView(file.bytes.buffer, file.bytes.byteOffset, file.bytes.byteLength);
      if (v.getUint32(4, true) !== file.bytes.byteLength - 8) throw new RangeError('RIFF size does not match the file');
      wav = parseWav(new Uint8Array(file.bytes));
      if (44 + wav.samples.length * 2 !== file.bytes.byteLength) throw new RangeError('data size does not match the file');
    } catch (e) {
      return this.error(rec, res, 400, `Invalid file format. ${(e as Error).message}`, 'invalid_request_error', 'invalid_value');
    }
    this.uploads.push({ fields, filename: file.filename, contentType: file.mimeType, sampleRateHz: wav.sampleRateHz, samples: wav.samples.length });
    let text = this.transcript;
    if (text === undefined) {
      if (wav.sampleRateHz !== 8000 && wav.sampleRateHz !== 16000) return this.error(rec, res, 400, 'the fake reads 8 or 16 kHz audio', 'invalid_request_error', 'invalid_value');
      const dec = new SimDecoder(wav.sampleRateHz);
      dec.push(wav.samples);
      dec.flush();
      text = dec
        .takeEvents()
        .filter((e) => e.type === 'final')
        .map((e) => e.text)
        .join(' ');
    }
    if (fields.response_format === 'text') {
      rec.status = 200;
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(text);
      return;
    }
    this.sendJson(rec, res, 200, { text });
  }
}

/** A streaming WAV header (16-bit mono PCM, sizes unknown: 0xFFFFFFFF) with a LIST chunk before `data`, as some servers send. */
function wavHeader(rateHz: number): Buffer {
  const list = Buffer.from('INFOISFT\x06\x00\x00\x00fake\x00\x00', 'latin1');
  const b = Buffer.alloc(12 + 24 + 8 + list.length + 8);
  b.write('RIFF', 0, 'latin1');
  b.writeUInt32LE(0xffffffff, 4);
  b.write('WAVE', 8, 'latin1');
  b.write('fmt ', 12, 'latin1');
  b.writeUInt32LE(16, 16);
  b.writeUInt16LE(1, 20);
  b.writeUInt16LE(1, 22);
  b.writeUInt32LE(rateHz, 24);
  b.writeUInt32LE(rateHz * 2, 28);
  b.writeUInt16LE(2, 32);
  b.writeUInt16LE(16, 34);
  b.write('LIST', 36, 'latin1');
  b.writeUInt32LE(list.length, 40);
  list.copy(b, 44);
  b.write('data', 44 + list.length, 'latin1');
  b.writeUInt32LE(0xffffffff, 48 + list.length);
  return b;
}

