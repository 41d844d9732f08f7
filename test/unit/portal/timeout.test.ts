/** The portal request timeout (control-plane/portal/timeout.ts): a slow method answers 503, a fast one its own answer. */
import { describe, expect, it } from 'vitest';
import { realClock } from '../../../shared/clock.js';
import { withTimeout } from '../../../control-plane/portal/timeout.js';

describe('portal request timeout', () => {
  it('gives up on a method that does not answer in time', async () => {
    const impl = withTimeout({ getHumanAgent: () => new Promise(() => undefined), listHumanAgents: async () => ({ agents: [] }) } as never, realClock, 20);
    const i = impl as unknown as Record<string, (req: unknown, ctx: unknown) => Promise<unknown>>;
    await expect(i.getHumanAgent({}, {})).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE', status: 503 });
    await expect(i.listHumanAgents({}, {})).resolves.toEqual({ agents: [] });
  });
});
