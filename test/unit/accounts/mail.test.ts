import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { loadConfig } from '../../../shared/config.js';
import { createMailer, DEV_MAILBOX_SIZE, DevMailbox, otpMail, SmtpMailer } from '../../../control-plane/accounts/mail.js';
import { captureLogger } from '../../helpers/infra.js';

describe('DevMailbox', () => {
  it('keeps the last 100 messages, filters by address (case-insensitive) and finds the last code', async () => {
    const { logger, lines } = captureLogger();
    const box = new DevMailbox(logger, new SimulatedClock());
    for (let i = 0; i < DEV_MAILBOX_SIZE + 20; i++) await box.send(otpMail(i % 2 ? 'Odd@Example.com' : 'even@example.com', String(100000 + i)));
    expect(box.messages()).toHaveLength(DEV_MAILBOX_SIZE);
    expect(box.messages('odd@example.com').every((m) => m.to === 'odd@example.com')).toBe(true);
    expect(box.lastCode('ODD@example.com')).toBe(String(100000 + DEV_MAILBOX_SIZE + 19));
    expect(box.lastCode('nobody@example.com')).toBeUndefined();
    expect(lines.at(-1)).toContain('dev mailbox');
    expect(lines.at(-1)).toContain(String(100000 + DEV_MAILBOX_SIZE + 19));
  });
});

describe('createMailer', () => {
  const { logger } = captureLogger();
  const clock = new SimulatedClock();

  it('development without SMTP: the dev mailbox', () => {
    const r = createMailer(loadConfig({ NODE_ENV: 'development' }), logger, clock);
    expect(r.mailbox).toBeInstanceOf(DevMailbox);
  });

  it('SMTP when configured (no dev mailbox)', async () => {
    const r = createMailer(loadConfig({ SMTP_URL: 'smtp://127.0.0.1:2525', NODE_ENV: 'production' }), logger, clock);
    expect(r.mailer).toBeInstanceOf(SmtpMailer);
    expect(r.mailbox).toBeUndefined();
    await r.mailer.close?.();
  });

  it('production without SMTP refuses to start', () => {
    expect(() => createMailer(loadConfig({ NODE_ENV: 'production' }), logger, clock)).toThrow(/SMTP_URL/);
  });
});
