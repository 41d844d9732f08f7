/**
 * REST route lookup without regular expressions: a tree of path segments (static children by
 * name, one parameter child), walked once per request. Precedence is that of the former regex
 * scan: among routes whose pattern matches, the one with the most static segments wins, ties in
 * table order (`/agents/lookup/phone` beats `/agents/:id/:x`). One trailing slash is accepted;
 * an empty segment never matches a parameter. Parameter values are percent-decoded.
 */

interface Entry<R> {
  route: R;
  paramNames: string[];
  staticScore: number;
  order: number;
}

interface Node<R> {
  statics: Map<string, Node<R>>;
  param?: Node<R>;
  entries: Entry<R>[];
}

export interface RouteMatch<R> {
  route?: R;
  params: Record<string, string>;
  /** Some route has this path (with another method): 405 instead of 404. */
  pathKnown: boolean;
}

const node = <R>(): Node<R> => ({ statics: new Map(), entries: [] });

export class RouteTable<R extends { method: string; path: string }> {
  private readonly root = node<R>();

  constructor(routes: R[]) {
    routes.forEach((route, order) => {
      let n = this.root;
      const paramNames: string[] = [];
      let staticScore = 0;
      for (const seg of route.path.split('/').filter(Boolean)) {
        if (seg.startsWith(':')) {
          paramNames.push(seg.slice(1));
          n = n.param ??= node<R>();
        } else {
          staticScore++;
          let next = n.statics.get(seg);
          if (!next) n.statics.set(seg, (next = node<R>()));
          n = next;
        }
      }
      n.entries.push({ route, paramNames, staticScore, order });
    });
  }

  match(method: string, pathname: string): RouteMatch<R> {
    if (pathname.charCodeAt(0) !== 47 /* / */) return { params: {}, pathKnown: false };
    const segs = pathname.slice(1).split('/');
    // One trailing slash is the same path ("/a/" = "/a"; "/" = the root).
    if (segs[segs.length - 1] === '') segs.pop();
    const found: { best?: Entry<R>; values?: string[]; pathKnown: boolean } = { pathKnown: false };
    walk(this.root, segs, 0, [], method, found);
    if (!found.best) return { params: {}, pathKnown: found.pathKnown };
    const params: Record<string, string> = {};
    const names = found.best.paramNames;
    for (let i = 0; i < names.length; i++) params[names[i]] = safeDecode(found.values![i]);
    return { route: found.best.route, params, pathKnown: true };
  }
}

function walk<R extends { method: string }>(
  n: Node<R>,
  segs: string[],
  i: number,
  values: string[],
  method: string,
  found: { best?: Entry<R>; values?: string[]; pathKnown: boolean },
): void {
  if (i === segs.length) {
    for (const e of n.entries) {
      found.pathKnown = true;
      if (e.route.method !== method) continue;
      const b = found.best;
      if (!b || e.staticScore > b.staticScore || (e.staticScore === b.staticScore && e.order < b.order)) {
        found.best = e;
        found.values = values.slice();
      }
    }
    return;
  }
  const seg = segs[i];
  if (seg === '') return;
  const s = n.statics.get(seg);
  if (s) walk(s, segs, i + 1, values, method, found);
  if (n.param) {
    values.push(seg);
    walk(n.param, segs, i + 1, values, method, found);
    values.pop();
  }
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s);
  } catch {
    return s;
  }
}
