/**
 * A call's mailbox: messages are handled one at a time, in arrival order, each to completion. A
 * message posted while another is being handled (by the handler itself, a timer, a runner) waits
 * its turn, so the actor's state never changes under a handler's feet. Nothing is handled once
 * the call is closed; a handler that throws fails the call (`onError`), never the node.
 */
export class Mailbox<M> {
  private readonly queue: M[] = [];
  private processing = false;

  constructor(
    private readonly handle: (msg: M) => void,
    private readonly isOpen: () => boolean,
    private readonly onError: (err: unknown) => void,
  ) {}

  post(msg: M): void {
    if (!this.isOpen()) return;
    this.queue.push(msg);
    if (this.processing) return;
    this.processing = true;
    try {
      while (this.queue.length && this.isOpen()) this.handle(this.queue.shift()!);
    } catch (err) {
      this.onError(err);
    } finally {
      this.processing = false;
    }
  }
}
