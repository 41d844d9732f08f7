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
    const r = createMailer(loadConfig({ SMTP_URL: 'smtp://127.0.0.1:2525', NODE_ENV: 'production', SECRETS_KEY: 'a'.repeat(64) }), logger, clock);
    expect(r.mailer).toBeInstanceOf(SmtpMailer);
    expect(r.mailbox).toBeUndefined();
    await r.mailer.close?.();
  });

  it('production without SMTP refuses to start', () => {
    // Refused as the configuration loads (one line naming it, exit 2), and by the mailer itself.
    expect(() => loadConfig({ NODE_ENV: 'production', SECRETS_KEY: 'a'.repeat(64) })).toThrow(/^invalid configuration: SMTP_URL must be set in production/);
    expect(() => createMailer({ ...loadConfig({}), nodeEnv: 'production', smtpUrl: undefined }, logger, clock)).toThrow(/SMTP_URL/);
  });
});

describe('SmtpMailer', () => {
  it('delivers to the server named by SMTP_URL (a minimal SMTP server on loopback)', async () => {
    const net = await import('node:net');
    let received = '';
    const server = net.createServer((s) => {
      let inData = false;
      let buf = '';
      s.write('220 test ESMTP\r\n');
      s.on('data', (chunk) => {
        buf += chunk.toString();
        let i: number;
        while ((i = buf.indexOf('\r\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (inData) {
            if (line === '.') {
              inData = false;
              s.write('250 queued\r\n');
            } else received += `${line}\n`;
          } else if (/^(EHLO|HELO)/i.test(line)) s.write('250 test\r\n');
          else if (/^DATA/i.test(line)) {
            inData = true;
            s.write('354 go\r\n');
          } else if (/^QUIT/i.test(line)) s.end('221 bye\r\n');
          else s.write('250 ok\r\n');
        }
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const mailer = new SmtpMailer(`smtp://127.0.0.1:${(server.address() as { port: number }).port}`, 'noreply@example.com');
    try {
      await mailer.send({ to: 'a@example.com', subject: 'Your code', text: 'hello 123456' });
      expect(received).toContain('Subject: Your code');
      expect(received).toContain('hello 123456');
    } finally {
      await mailer.close();
      await new Promise((r) => server.close(r));
    }
  });

  it('a server that accepts but never greets fails the send within the timeout (nodemailer waits minutes by default)', async () => {
    const net = await import('node:net');
    const sockets: import('node:net').Socket[] = [];
    const server = net.createServer((s) => sockets.push(s)); // never writes the 220 greeting
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as { port: number }).port;
    const mailer = new SmtpMailer(`smtp://127.0.0.1:${port}`, 'noreply@example.com', 300);
    try {
      const started = performance.now();
      await expect(mailer.send({ to: 'a@example.com', subject: 's', text: 't' })).rejects.toThrow(/timeout/i);
      expect(performance.now() - started).toBeLessThan(3000);
    } finally {
      await mailer.close();
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    }
  });
});
