/** Field checks of analysis schemas (control-plane/analysis/fields.ts): each failure names its field. */
import { describe, expect, it } from 'vitest';
import { jsonSchemaOf, MAX_FIELDS, parseFields } from '../../../control-plane/analysis/fields.js';

const fieldOf = (value: unknown): string | undefined => {
  try {
    parseFields(value);
    return undefined;
  } catch (err) {
    return (err as { options?: { details?: Array<{ field: string }> } }).options?.details?.[0]?.field;
  }
};

describe('parseFields', () => {
  it.each([
    ['not a list', { name: 'a' }, 'fields'],
    ['empty list', [], 'fields'],
    ['too many', Array.from({ length: MAX_FIELDS + 1 }, (_, i) => ({ name: `f${i}`, type: 'string' })), 'fields'],
    ['not an object', ['a'], 'fields[0]'],
    ['bad name', [{ name: 'a b', type: 'string' }], 'fields[0].name'],
    ['duplicate (any case)', [{ name: 'a', type: 'string' }, { name: 'A', type: 'string' }], 'fields[1].name'],
    ['unknown type', [{ name: 'a', type: 'date' }], 'fields[0].type'],
    ['enum without values', [{ name: 'a', type: 'enum' }], 'fields[0].enum'],
    ['enum value empty', [{ name: 'a', type: 'enum', enum: ['x', ' '] }], 'fields[0].enum[1]'],
    ['enum value twice', [{ name: 'a', type: 'enum', enum: ['x', 'x'] }], 'fields[0].enum[1]'],
    ['enum on a string', [{ name: 'a', type: 'string', enum: ['x'] }], 'fields[0].enum'],
    ['description not text', [{ name: 'a', type: 'string', description: 3 }], 'fields[0].description'],
    ['the prototype slot as a name', [{ name: 'a', type: 'string' }, { name: '__proto__', type: 'string' }], 'fields[1].name'],
  ])('%s -> 400 naming %s', (_what, value, field) => {
    expect(fieldOf(value)).toBe(field);
  });

  it('normalises: trimmed, unknown keys dropped, enum only on enum fields', () => {
    expect(parseFields([{ name: ' a ', type: 'enum', enum: [' x ', 'y'], extra: 1 }, { name: 'b', type: 'string[]', enum: [], description: ' why ' }])).toEqual([
      { name: 'a', type: 'enum', enum: ['x', 'y'] },
      { name: 'b', type: 'string[]', description: 'why' },
    ]);
  });

  it('names that are Object.prototype members are real properties of the JSON Schema', () => {
    const schema = jsonSchemaOf(parseFields([{ name: 'constructor', type: 'boolean' }, { name: 'toString', type: 'string' }]));
    expect(Object.keys(schema.properties as object)).toEqual(['constructor', 'toString']);
    expect(JSON.parse(JSON.stringify(schema)).properties.constructor).toEqual({ type: ['boolean', 'null'] });
  });
});
