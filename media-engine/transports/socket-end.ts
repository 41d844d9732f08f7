/**
 * Closing a call's WebSocket the same way on every transport (browser and carrier): the reason is
 * cut to 120 bytes (a close frame carries at most 123 bytes of reason) and a socket the peer has
 * already closed is not an error. Shared so the two transports cannot drift on either rule.
 */

export interface EndableSocket {
  end(code?: number, reason?: string): void;
}

/** Ends `ws` with `code` and `reason` (truncated); a no-op when the peer already closed it. */
export function endSocket(ws: EndableSocket, code: number, reason: string): void {
  try {
    ws.end(code, reason.slice(0, 120));
  } catch {
    // already closed by the peer
  }
}
