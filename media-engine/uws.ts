/**
 * uWebSockets.js, asserted native. The unofficial build silently falls back to a slow JS shim
 * when its binary fails to load (wrong Node ABI, glibc): we refuse to run on the fallback.
 */
import uws from 'uWebSockets.js';

export function assertNativeUws(): void {
  const native = typeof (uws as unknown as Record<string, unknown>).getParts === 'function' && 'SHARED_COMPRESSOR' in uws;
  if (!native || process.env.UWS_USE_FALLBACK) {
    throw new Error(
      `uWebSockets.js native binary did not load (Node ABI ${process.versions.modules}, ${process.platform}-${process.arch}); refusing to run on the JS fallback`,
    );
  }
}

export { uws };
export type { HttpRequest, HttpResponse, TemplatedApp, WebSocket, us_listen_socket } from 'uWebSockets.js';
