/**
 * In-process notice "run X changed" from the runner to the progress streams of this process, so a
 * stream answers a change at once instead of at its next poll. Streams on other replicas see the
 * change at their next poll (every 2 s): the database stays the only source of truth.
 */
export class RunChanges {
  private readonly listeners = new Map<string, Set<() => void>>();

  on(runId: string, fn: () => void): () => void {
    let set = this.listeners.get(runId);
    if (!set) this.listeners.set(runId, (set = new Set()));
    set.add(fn);
    return () => {
      set!.delete(fn);
      if (set!.size === 0) this.listeners.delete(runId);
    };
  }

  emit(runId: string): void {
    for (const fn of this.listeners.get(runId) ?? []) fn();
  }
}
