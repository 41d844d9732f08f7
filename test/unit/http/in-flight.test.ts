import { describe, expect, it } from 'vitest';
import type { NodeRes } from '../../../control-plane/http/rest.js';
import { InFlight } from '../../../control-plane/http/in-flight.js';

const res = (name: string) => ({ name }) as unknown as NodeRes & { name: string };
const names = (list: InFlight) => [...list].map((r) => (r as unknown as { name: string }).name);

describe('InFlight', () => {
  it('adds, removes from any position, and walks newest first', () => {
    const list = new InFlight();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(res);
    for (const r of [a, b, c, d]) list.add(r!);
    expect(list.size).toBe(4);
    expect(names(list)).toEqual(['d', 'c', 'b', 'a']);
    list.delete(b!); // middle
    list.delete(d!); // head
    list.delete(a!); // tail
    expect(names(list)).toEqual(['c']);
    expect(list.size).toBe(1);
    list.delete(c!);
    expect(names(list)).toEqual([]);
    expect(list.size).toBe(0);
  });

  it('counts a response once however often it is added or removed', () => {
    const list = new InFlight();
    const a = res('a');
    list.add(a);
    list.add(a);
    expect(list.size).toBe(1);
    list.delete(a);
    list.delete(a);
    expect(list.size).toBe(0);
    list.add(a);
    expect(names(list)).toEqual(['a']);
  });

  it('a removed response refers to no other (a dead one cannot keep live ones from the garbage collector)', () => {
    const list = new InFlight();
    const [a, b, c] = ['a', 'b', 'c'].map(res);
    for (const r of [a, b, c]) list.add(r!);
    list.delete(b!);
    const linked = Object.getOwnPropertySymbols(b!).map((s) => (b as unknown as Record<symbol, unknown>)[s]);
    expect(linked.filter((v) => typeof v === 'object' && v !== null)).toEqual([]);
    expect(names(list)).toEqual(['c', 'a']);
  });

  it('deleteConnection removes the responses of that connection only', () => {
    const list = new InFlight();
    const [sockA, sockB] = [{}, {}];
    const on = (name: string, socket: object) => ({ name, req: { socket } }) as unknown as NodeRes;
    for (const r of [on('a1', sockA), on('b1', sockB), on('a2', sockA), on('a3', sockA)]) list.add(r);
    list.deleteConnection(sockA);
    expect(names(list)).toEqual(['b1']);
    expect(list.size).toBe(1);
  });
});
