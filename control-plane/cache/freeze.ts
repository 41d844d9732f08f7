/**
 * Cached values are shared by every request that reads them: frozen, so a caller that tried to
 * change one fails loudly instead of corrupting the next answer. The REST edge also reuses the
 * serialized JSON of a frozen response object (http/rest.ts).
 */
export function deepFreeze<T>(v: T): T {
  if (v && typeof v === 'object' && !Object.isFrozen(v)) {
    // Typed arrays cannot be frozen (bytes fields): left as they are.
    if (ArrayBuffer.isView(v)) return v;
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}
