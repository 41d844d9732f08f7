/** Scraping a process's `/metrics` in tests: raw (any Authorization) or the text with the token. */
import { expect } from 'vitest';

export function metricsScraper(port: () => number, token: string) {
  const scrape = (auth?: string): Promise<Response> =>
    fetch(`http://127.0.0.1:${port()}/metrics`, { headers: auth ? { authorization: auth } : {}, signal: AbortSignal.timeout(5000) });
  async function metrics(): Promise<string> {
    const res = await scrape(`Bearer ${token}`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/plain');
    return res.text();
  }
  return { scrape, metrics };
}

/** The value of one sample line (`name{labels} value`), or undefined. */
export function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}
