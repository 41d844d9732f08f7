// autocannon 8 ships no types; the bench uses only the options and result fields below.
declare module 'autocannon' {
  interface Histogram {
    average: number;
    mean: number;
    stddev: number;
    min: number;
    max: number;
    p50: number;
    p90: number;
    p97_5: number;
    p99: number;
    total: number;
  }
  interface Result {
    requests: Histogram & { sent: number };
    latency: Histogram;
    throughput: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    duration: number;
    '2xx': number;
  }
  interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    duration?: number;
    amount?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string | Buffer;
    workers?: number;
    timeout?: number;
    requests?: Array<{ method?: string; path?: string; headers?: Record<string, string>; body?: string | Buffer }>;
  }
  function autocannon(opts: Options): Promise<Result>;
  export default autocannon;
}
