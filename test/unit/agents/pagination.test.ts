import { describe, expect, it } from 'vitest';
import { pageMeta, pageOf } from '../../../control-plane/http/pagination.js';
import { AppError } from '../../../shared/errors.js';

describe('pageOf', () => {
  it('defaults to limit 20, offset 0', () => expect(pageOf({})).toEqual({ limit: 20, offset: 0 }));
  it.each([
    [{ limit: 0 }, 'limit'],
    [{ limit: 201 }, 'limit'],
    [{ limit: -1 }, 'limit'],
    [{ limit: 1.5 }, 'limit'],
    [{ offset: -1 }, 'offset'],
  ])('%j is a 400 naming %s', (req, field) => {
    try {
      pageOf(req);
      throw new Error('accepted');
    } catch (e) {
      expect((e as AppError).code).toBe('INVALID_REQUEST');
      expect((e as AppError).details?.[0].field).toBe(field);
    }
  });
  it('accepts the bounds', () => {
    expect(pageOf({ limit: 1 })).toEqual({ limit: 1, offset: 0 });
    expect(pageOf({ limit: 200, offset: 1000 })).toEqual({ limit: 200, offset: 1000 });
  });
});

describe('pageMeta', () => {
  it.each([
    [{ limit: 20, offset: 0 }, 0, { page: 1, perPage: 20, total: 0, totalPages: 0 }],
    [{ limit: 2, offset: 0 }, 5, { page: 1, perPage: 2, total: 5, totalPages: 3 }],
    [{ limit: 2, offset: 3 }, 5, { page: 2, perPage: 2, total: 5, totalPages: 3 }],
    [{ limit: 2, offset: 4 }, 5, { page: 3, perPage: 2, total: 5, totalPages: 3 }],
    [{ limit: 2, offset: 10 }, 5, { page: 6, perPage: 2, total: 5, totalPages: 3 }],
    [{ limit: 5, offset: 0 }, 5, { page: 1, perPage: 5, total: 5, totalPages: 1 }],
  ])('%j of %i', (page, total, expected) => expect(pageMeta(page, total)).toEqual(expected));
});
