/**
 * Outgoing mail. SMTP (nodemailer) when SMTP_URL is set; otherwise the development mailbox, which
 * logs the one-time code and keeps the last messages in memory for tests and the README
 * walkthrough (served at `GET /api/v1/dev/mailbox` to the organization API key only: index.ts).
 * Production refuses to start without SMTP.
 */
import nodemailer from 'nodemailer';
import SMTPTransport from 'nodemailer/lib/smtp-transport/index.js';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/logger.js';
import type { Clock } from '../../shared/clock.js';

export interface MailMessage {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  send(msg: MailMessage): Promise<void>;
  close?(): Promise<void>;
}

export interface StoredMail extends MailMessage {
  sentAtMs: number;
  /** The first 6-digit code in the text, if any. */
  code?: string;
}

/** Messages kept by the development mailbox (oldest dropped first). */
export const DEV_MAILBOX_SIZE = 100;

export class DevMailbox implements Mailer {
  private readonly kept: StoredMail[] = [];

  constructor(
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {}

  async send(msg: MailMessage): Promise<void> {
    const code = /\b(\d{6})\b/.exec(msg.text)?.[1];
    this.kept.push({ ...msg, to: msg.to.toLowerCase(), sentAtMs: this.clock.now(), code });
    if (this.kept.length > DEV_MAILBOX_SIZE) this.kept.splice(0, this.kept.length - DEV_MAILBOX_SIZE);
    // The development feature: the code is readable in the log. Never active in production.
    this.logger.info({ to: msg.to, subject: msg.subject, devCode: code }, `dev mailbox: mail to ${msg.to}${code ? ` (code ${code})` : ''}`);
  }

  /** Newest last; only those to `to` when given. */
  messages(to?: string): StoredMail[] {
    const want = to?.trim().toLowerCase();
    return this.kept.filter((m) => !want || m.to === want).map((m) => ({ ...m }));
  }

  lastCode(email: string): string | undefined {
    const all = this.messages(email);
    for (let i = all.length - 1; i >= 0; i--) if (all[i].code) return all[i].code;
    return undefined;
  }
}

/** Connect, greeting and socket inactivity bound of each SMTP send (ms). */
export const SMTP_TIMEOUT_MS = 10_000;

export class SmtpMailer implements Mailer {
  private readonly transport: nodemailer.Transporter;

  constructor(
    smtpUrl: string,
    private readonly from: string,
    timeoutMs = SMTP_TIMEOUT_MS,
  ) {
    // nodemailer waits up to 2 min to connect and 1 h on a silent socket: a stalled SMTP server
    // would hold sign-up codes and alert jobs that long. Each phase gets `timeoutMs`.
    // (createTransport({ url, ... }) keeps only what the URL says; SMTPTransport merges both.)
    this.transport = nodemailer.createTransport(new SMTPTransport({ url: smtpUrl, connectionTimeout: timeoutMs, greetingTimeout: timeoutMs, socketTimeout: timeoutMs }));
  }

  async send(msg: MailMessage): Promise<void> {
    await this.transport.sendMail({ from: this.from, to: msg.to, subject: msg.subject, text: msg.text });
  }

  async close(): Promise<void> {
    this.transport.close();
  }
}

export function createMailer(config: Config, logger: Logger, clock: Clock): { mailer: Mailer; mailbox?: DevMailbox } {
  if (config.smtpUrl) return { mailer: new SmtpMailer(config.smtpUrl, config.mailFrom) };
  if (config.nodeEnv === 'production') {
    throw new Error('invalid configuration: SMTP_URL must be set in production (the development mailbox is refused)');
  }
  logger.warn('SMTP_URL unset: using the development mailbox (codes are logged; mails are served at /api/v1/dev/mailbox to the ORG_API_KEY bearer)');
  const mailbox = new DevMailbox(logger, clock);
  return { mailer: mailbox, mailbox };
}

export function otpMail(to: string, code: string): MailMessage {
  return {
    to,
    subject: 'Your Voiceplane verification code',
    text: `Your verification code is ${code}. It expires in 10 minutes. If you did not ask for it, ignore this message.`,
  };
}
