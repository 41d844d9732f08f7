/** Tiny DOM helpers: elements are built with text nodes only (no innerHTML), so no markup injection. */
export function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, ...children: Array<Node | string>): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  for (const c of children) el.append(c);
  return el;
}

export function $<T extends HTMLElement = HTMLElement>(id: string): T {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} missing`);
  return el as T;
}

export function show(id: string, on = true): void {
  $(id).hidden = !on;
}

export const ms = (v: number | null | undefined): string => (v === null || v === undefined || !Number.isFinite(v) ? '-' : `${Math.round(v)} ms`);
