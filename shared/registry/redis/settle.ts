/** Waits for `p` (its failure ignored) at most `timeoutMs`: a silent Redis must not hold a shutdown. */
export async function settleWithin(p: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p.catch(() => {}), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
  clearTimeout(timer);
}
