/**
 * Ordered list of migrations. Each lives in its own module as SQL text (so `npm run build` needs no
 * asset copying). Never edit an applied migration: add a new one.
 */
import { m0001_accounts } from './0001_accounts.js';
import { m0002_agents } from './0002_agents.js';
import { m0003_conversations } from './0003_conversations.js';

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export const MIGRATIONS: Migration[] = [m0001_accounts, m0002_agents, m0003_conversations];
