/**
 * A carrier WebSocket for transport unit tests: records what the transport sends (text or binary,
 * binary copied), never backs up, and parses the text messages on request.
 */
export class FakeCarrierSocket {
  sent: Array<{ msg: Uint8Array | string; binary: boolean }> = [];
  send(message: ArrayBufferView | string, isBinary = false): number {
    this.sent.push({ msg: typeof message === 'string' ? message : new Uint8Array(message.buffer.slice(message.byteOffset, message.byteOffset + message.byteLength)), binary: isBinary });
    return 1;
  }
  getBufferedAmount(): number {
    return 0;
  }
  end(): void {}
  /** The text messages, parsed. */
  texts(): Array<Record<string, any>> {
    return this.sent.filter((s) => !s.binary).map((s) => JSON.parse(typeof s.msg === 'string' ? s.msg : Buffer.from(s.msg).toString('utf8')));
  }
}
