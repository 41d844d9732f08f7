/**
 * Ordered list of migrations. Each lives in its own module as SQL text (so `npm run build` needs no
 * asset copying). Never edit an applied migration: add a new one.
 */
import { m0001_accounts } from './0001_accounts.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [m0001_accounts];
