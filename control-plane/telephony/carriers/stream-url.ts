/**
 * The engine socket URL with the session in its query, for carriers whose stream's first frame is
 * not promised to carry our parameters (Plivo, Vonage, Exotel: `sessionParams: 'query'` on the
 * engine side; values in the first frame win when both exist).
 */
export function withSessionQuery(streamUrl: string, params: Record<string, string>): string {
  const u = new URL(streamUrl);
  for (const [k, v] of Object.entries(params)) if (v) u.searchParams.set(k, v);
  return u.toString();
}
