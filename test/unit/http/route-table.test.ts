/**
 * REST route lookup (control-plane/http/route-table.ts): the precedence of the former regex scan
 * (most static segments first, ties in table order), 404 vs 405, one trailing slash, empty
 * segments, percent-decoded parameters.
 */
import { describe, expect, it } from 'vitest';
import { RouteTable } from '../../../control-plane/http/route-table.js';

const routes = [
  { method: 'GET', path: '/api/v1/agents', name: 'list' },
  { method: 'POST', path: '/api/v1/agents', name: 'create' },
  { method: 'GET', path: '/api/v1/agents/:id', name: 'get' },
  { method: 'PUT', path: '/api/v1/agents/:id', name: 'update' },
  { method: 'GET', path: '/api/v1/agents/:agent_id/:x', name: 'param-pair' },
  { method: 'GET', path: '/api/v1/agents/lookup/phone', name: 'lookup' },
  { method: 'GET', path: '/api/v1/agents/:agent_id/tools/:tool_id', name: 'tool' },
  { method: 'GET', path: '/a/:x/c/d', name: 'three-static' },
  { method: 'GET', path: '/a/b/:y/:z', name: 'two-static' },
  { method: 'GET', path: '/t/:p', name: 'first' },
  { method: 'GET', path: '/t/:q', name: 'second' },
];
const table = new RouteTable(routes);
const m = (method: string, path: string) => {
  const r = table.match(method, path);
  return { name: r.route?.name, params: r.params, pathKnown: r.pathKnown };
};

describe('RouteTable', () => {
  it('matches static and parameter segments', () => {
    expect(m('GET', '/api/v1/agents')).toEqual({ name: 'list', params: {}, pathKnown: true });
    expect(m('POST', '/api/v1/agents')).toMatchObject({ name: 'create' });
    expect(m('GET', '/api/v1/agents/abc')).toEqual({ name: 'get', params: { id: 'abc' }, pathKnown: true });
    expect(m('PUT', '/api/v1/agents/abc')).toEqual({ name: 'update', params: { id: 'abc' }, pathKnown: true });
    expect(m('GET', '/api/v1/agents/a1/tools/t1')).toEqual({ name: 'tool', params: { agent_id: 'a1', tool_id: 't1' }, pathKnown: true });
  });

  it('prefers more static segments over earlier table order, and table order on ties', () => {
    expect(m('GET', '/api/v1/agents/lookup/phone')).toMatchObject({ name: 'lookup', params: {} });
    expect(m('GET', '/api/v1/agents/a1/flow')).toEqual({ name: 'param-pair', params: { agent_id: 'a1', x: 'flow' }, pathKnown: true });
    // '/a/:x/c/d' has three static segments, '/a/b/:y/:z' two: the first wins although a
    // static-first walk would take the 'b' branch.
    expect(m('GET', '/a/b/c/d')).toEqual({ name: 'three-static', params: { x: 'b' }, pathKnown: true });
    expect(m('GET', '/a/b/x/d')).toEqual({ name: 'two-static', params: { y: 'x', z: 'd' }, pathKnown: true });
    expect(m('GET', '/t/1')).toEqual({ name: 'first', params: { p: '1' }, pathKnown: true });
  });

  it('tells a known path with another method (405) from an unknown one (404)', () => {
    expect(m('DELETE', '/api/v1/agents/abc')).toEqual({ name: undefined, params: {}, pathKnown: true });
    expect(m('GET', '/api/v1/nothing')).toEqual({ name: undefined, params: {}, pathKnown: false });
    expect(m('GET', '/api/v1/agents/a/b/c/d')).toMatchObject({ name: undefined, pathKnown: false });
  });

  it('accepts one trailing slash, never an empty segment', () => {
    expect(m('GET', '/api/v1/agents/')).toMatchObject({ name: 'list' });
    expect(m('GET', '/api/v1/agents/abc/')).toMatchObject({ name: 'get', params: { id: 'abc' } });
    expect(m('GET', '/api/v1/agents//')).toMatchObject({ name: undefined, pathKnown: false });
    expect(m('GET', '/api//v1/agents')).toMatchObject({ name: undefined, pathKnown: false });
    expect(m('GET', 'api/v1/agents')).toMatchObject({ name: undefined, pathKnown: false });
  });

  it('percent-decodes parameters (malformed escapes stay as sent)', () => {
    expect(m('GET', '/api/v1/agents/a%20b').params).toEqual({ id: 'a b' });
    expect(m('GET', '/api/v1/agents/%E0%A4%A').params).toEqual({ id: '%E0%A4%A' });
  });
});
