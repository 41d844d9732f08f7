/**
 * The request URL, parsed once per request. Several raw handlers look at every request before
 * the REST table does; each `new URL` cost ~1-2 us (issue 13's REST profile: 4 % of a GET).
 *
 * Per-request facts live in symbol-keyed fields of the request and response objects, not in
 * WeakMaps keyed by them: a WeakMap entry per short-lived object is an ephemeron, which every
 * scavenge must trace and clear (visible as `ClearOldEphemerons` and ephemeron write barriers
 * in the REST profile).
 */
import type { NodeReq, NodeRes } from './rest.js';

const kUrl = Symbol('voiceplane.url');
const kRoute = Symbol('voiceplane.routeTemplate');

type WithUrl = NodeReq & { [kUrl]?: URL };
type WithRoute = NodeRes & { [kRoute]?: string };

export function requestUrl(req: NodeReq): URL {
  const r = req as WithUrl;
  return (r[kUrl] ??= new URL(req.url ?? '/', 'http://localhost'));
}

/** The matched route's template of a response (request metrics: a raw path would be one series per id). */
export function setRouteTemplate(res: NodeRes, template: string): void {
  (res as WithRoute)[kRoute] = template;
}

export function routeTemplateOf(res: NodeRes): string | undefined {
  return (res as WithRoute)[kRoute];
}

/**
 * A raw handler that declines synchronously (`false`, no promise, no microtask) for requests
 * `accepts` turns down, so the REST table's requests pay nothing for it.
 */
export function rawRoute(accepts: (req: NodeReq, url: URL) => boolean, handle: (req: NodeReq, res: NodeRes) => Promise<boolean>): (req: NodeReq, res: NodeRes) => false | Promise<boolean> {
  return (req, res) => (accepts(req, requestUrl(req)) ? handle(req, res) : false);
}
