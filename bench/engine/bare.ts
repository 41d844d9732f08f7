/**
 * The same-run baseline for engine capacity: a bare uWebSockets.js server on the engine's socket
 * paths that does only what no engine can avoid, in the same process setup. Browser sockets get
 * the `pipeline_ready` handshake and raw PCM; carrier sockets get their JSON parsed and base64
 * payload decoded (the protocol's own cost). Every inbound frame gets a cheap voice check, and when
 * a caller's speech stops the server streams 2.5 s of reply audio (a constant frame) paced on a
 * 10 ms tick with a 100 ms lead, stopping when the caller talks over it. The load generator drives it with the same script as the engine,
 * so "engine / bare" ratios isolate the engine's own cost from socket I/O and machine noise.
 */
import { uws, type WebSocket, type us_listen_socket } from '../../media-engine/uws.js';
import { Histogram } from '../lib/stats.js';
import type { ProbeSnapshot } from './probe.js';

const FRAME_MS = 20;
const LEAD_FRAMES = 5;
const REPLY_FRAMES = 125;
const TICK_MS = 10;

interface Conn {
  ws: WebSocket<unknown>;
  /** The reply frame and whether it goes as binary (browser) or text (carrier JSON). */
  frame: Uint8Array;
  binary: boolean;
  voice: boolean;
  replyLeft: number;
  paceStartMs: number;
  sent: number;
}

export interface BareServer {
  port: number;
  calls(): number;
  reset(): void;
  snapshot(): ProbeSnapshot;
  close(): void;
}

export async function startBareServer(): Promise<BareServer> {
  const conns = new Set<Conn>();
  const lateSlot = new Histogram(0, 2000, 0.05);
  const lateSched = new Histogram(0, 2000, 0.05);
  const tickLate = new Histogram(0, 2000, 0.05);
  let framesSent = 0;
  let dropped = 0;
  const pcmReply = new Uint8Array(640).fill(7);
  const mediaReply = (streamSid: string) => new TextEncoder().encode(`{"event":"media","streamSid":"${streamSid}","media":{"payload":"${Buffer.alloc(160, 0x55).toString('base64')}"}}`);
  const inBytes = Buffer.alloc(640);
  /** A caller frame arrived: voice check, then barge-in or start of a reply. */
  const onFrame = (conn: Conn, b: Uint8Array, silent: number) => {
    let voice = false;
    for (let i = 0; i < b.length; i += 8) if (b[i] !== silent) voice = true;
    if (voice && conn.replyLeft > 0) conn.replyLeft = 0; // barge-in
    if (!voice && conn.voice) {
      conn.replyLeft = REPLY_FRAMES;
      conn.paceStartMs = performance.now();
      conn.sent = 0;
      pace(conn, conn.paceStartMs, false);
    }
    conn.voice = voice;
  };
  const behaviour = { maxPayloadLength: 64 * 1024, idleTimeout: 60, maxBackpressure: 1024 * 1024 };
  const app = uws.App();
  app.ws<{ conn?: Conn }>('/api/v1/voice/ws/:sessionId', {
    ...behaviour,
    open: (ws) => {
      const conn: Conn = { ws: ws as WebSocket<unknown>, frame: pcmReply, binary: true, voice: false, replyLeft: 0, paceStartMs: 0, sent: 0 };
      ws.getUserData().conn = conn;
      conns.add(conn);
      ws.send(JSON.stringify({ type: 'pipeline_ready', server_ts: Date.now() }), false);
    },
    message: (ws, message, isBinary) => {
      const conn = ws.getUserData().conn;
      if (conn && isBinary) onFrame(conn, new Uint8Array(message), 0);
    },
    close: (ws) => {
      const conn = ws.getUserData().conn;
      if (conn) conns.delete(conn);
    },
  });
  app.ws<{ conn?: Conn }>('/api/v1/voice/ws/twilio/:callSid', {
    ...behaviour,
    message: (ws, message) => {
      const data = ws.getUserData();
      const msg = JSON.parse(Buffer.from(message).toString('utf8')) as { event?: string; streamSid?: string; media?: { payload?: string } };
      if (msg.event === 'media' && data.conn) {
        const n = inBytes.write(msg.media?.payload ?? '', 0, 'base64');
        onFrame(data.conn, inBytes.subarray(0, n), 0xff);
      } else if (msg.event === 'start' && !data.conn) {
        data.conn = { ws: ws as WebSocket<unknown>, frame: mediaReply(msg.streamSid ?? ''), binary: false, voice: false, replyLeft: 0, paceStartMs: 0, sent: 0 };
        conns.add(data.conn);
      }
    },
    close: (ws) => {
      const conn = ws.getUserData().conn;
      if (conn) conns.delete(conn);
    },
  });
  app.any('/*', (res) => void res.writeStatus('404 Not Found').end());
  let tickDueAt = 0;
  function pace(c: Conn, now: number, inTick: boolean): void {
    const due = Math.floor((now - c.paceStartMs) / FRAME_MS) + 1 + LEAD_FRAMES;
    while (c.sent < due && c.replyLeft > 0) {
      const t = performance.now();
      const dueAt = c.paceStartMs + Math.max(0, c.sent - LEAD_FRAMES) * FRAME_MS;
      lateSched.record(t - dueAt);
      lateSlot.record(t - (inTick ? Math.max(dueAt, tickDueAt) : dueAt));
      if (c.ws.send(c.frame, c.binary) === 2) dropped++;
      framesSent++;
      c.sent++;
      c.replyLeft--;
    }
  }
  let lastTick = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    tickDueAt = lastTick + TICK_MS;
    tickLate.record(now - tickDueAt);
    lastTick = now;
    for (const c of conns) if (c.replyLeft > 0) pace(c, now, true);
  }, TICK_MS);
  const listen = await new Promise<us_listen_socket>((resolve, reject) => app.listen('127.0.0.1', 0, (s) => (s ? resolve(s) : reject(new Error('bare server could not listen')))));
  const empty = { underruns: 0, bargeToClearMs: [], bargeArrivalToClearMs: [], bargeToLastFrameMs: [], turnOverheadMs: [], turnTotalMs: [], turns: 0, interruptedTurns: 0, framesAfterClear: 0, droppedPlayoutFrames: 0 };
  return {
    port: uws.us_socket_local_port(listen),
    calls: () => conns.size,
    reset() {
      lateSlot.reset();
      lateSched.reset();
      tickLate.reset();
      framesSent = 0;
      dropped = 0;
    },
    snapshot: () => ({ ...empty, lateSlot: lateSlot.toJSON(), lateSched: lateSched.toJSON(), tickLate: tickLate.toJSON(), framesSent, droppedFrames: dropped, callsAttached: conns.size }),
    close() {
      clearInterval(timer);
      for (const c of conns) c.ws.end(1000, 'bench_done');
      uws.us_listen_socket_close(listen);
    },
  };
}
