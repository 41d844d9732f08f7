import postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, unknown>>;

export interface SqlOptions {
  /** Pool size. Default 10. */
  max?: number;
  /** Schema to put first on the search path (tests isolate themselves with one). */
  schema?: string;
  /** Called for server notices (kept out of stdout). */
  onnotice?: (n: postgres.Notice) => void;
}

/** One postgres.js pool. int8 comes back as a JS number (counts fit comfortably). */
export function createSql(url: string, opts: SqlOptions = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    idle_timeout: 30,
    connect_timeout: 10,
    onnotice: opts.onnotice ?? (() => {}),
    connection: opts.schema ? { search_path: `${opts.schema},public` } : undefined,
    types: {
      bigint: {
        to: 20,
        from: [20],
        serialize: (x: number) => x.toString(),
        parse: (x: string) => Number(x),
      },
    },
  }) as unknown as Sql;
}
