/**
 * The REST calls the console makes. API routes take the key as a bearer token; voice routes take
 * no credential (the session id is the credential). The key lives in sessionStorage: this tab only.
 */
const KEY = 'voiceplane.apiKey';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export const auth = {
  get key(): string {
    return sessionStorage.getItem(KEY) ?? '';
  },
  set(key: string): void {
    sessionStorage.setItem(KEY, key);
  },
  clear(): void {
    sessionStorage.removeItem(KEY);
  },
};

async function request<T>(method: string, path: string, body?: unknown, bearer = true): Promise<T> {
  const headers: Record<string, string> = {};
  if (bearer) headers.authorization = `Bearer ${auth.key}`;
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`/api/v1${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const json = (await res.json().catch(() => ({}))) as { data?: T; error?: { code?: string; message?: string } | null };
  if (!res.ok) throw new ApiError(res.status, json.error?.code ?? 'HTTP_' + res.status, json.error?.message ?? res.statusText);
  // Enveloped routes carry `data`; the voice routes answer raw JSON.
  return ('data' in json ? json.data : json) as T;
}

export interface Workspace {
  id: string;
  name: string;
}
export interface Agent {
  id: string;
  name: string;
  workspace_id?: string;
}
export interface Conversation {
  id: string;
  session_id: string;
  agent_id: string;
  status: string;
  total_turns: number;
  total_duration_ms: number | null;
  avg_response_latency_ms: number | null;
  started_at: string;
}
export interface Message {
  id: string;
  turn_number: number;
  role: string;
  content: string;
  audio_url?: string | null;
  total_latency_ms?: number | null;
}
export interface ConversationDetail {
  conversation: Conversation;
  messages: Message[];
  tool_calls: unknown[];
}

export const api = {
  workspaces: () => request<Workspace[]>('GET', '/auth/workspaces'),
  agents: (workspaceId: string) => request<Agent[]>('GET', `/agents?workspace_id=${encodeURIComponent(workspaceId)}&limit=200`),
  conversations: (workspaceId: string, agentId: string) =>
    request<Conversation[]>('GET', `/conversations?workspace_id=${encodeURIComponent(workspaceId)}&agent_id=${encodeURIComponent(agentId)}&limit=20`),
  conversation: (id: string) => request<ConversationDetail>('GET', `/conversations/${encodeURIComponent(id)}`),
  bySession: (sessionId: string) => request<Conversation>('GET', `/conversations/by-session/${encodeURIComponent(sessionId)}`),
  /** No credential: the answer's session id is the call's only credential. */
  startSession: (agentId: string) => request<{ session_id: string; ws_url: string }>('POST', '/voice/sessions/start', { agent_id: agentId }, false),
};
