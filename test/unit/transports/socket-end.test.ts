/**
 * endSocket, shared by the browser and Twilio transports: the close reason is cut to 120 bytes
 * (a close frame carries at most 123) and a socket the peer already closed does not throw.
 */
import { describe, expect, it } from 'vitest';
import { endSocket } from '../../../media-engine/transports/socket-end.js';

describe('endSocket', () => {
  it('passes the code and truncates the reason to 120 characters', () => {
    const calls: Array<[number | undefined, string | undefined]> = [];
    endSocket({ end: (code, reason) => calls.push([code, reason]) }, 4000, 'x'.repeat(200));
    expect(calls).toEqual([[4000, 'x'.repeat(120)]]);
  });

  it('swallows the error of a socket the peer already closed', () => {
    const ws = {
      end(): void {
        throw new Error('Invalid access of closed uWS.WebSocket/SSLWebSocket.');
      },
    };
    expect(() => endSocket(ws, 1000, 'bye')).not.toThrow();
  });
});
