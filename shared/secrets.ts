/**
 * Secrets at rest: AES-256-GCM with a random 96-bit IV per value. Stored form:
 * `v1.<iv b64url>.<tag b64url>.<ciphertext b64url>`. Public responses only ever see `mask()`.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

export class SecretBox {
  constructor(private readonly key: Buffer) {
    if (key.length !== 32) throw new Error('secrets key must be 32 bytes');
  }

  encrypt(plain: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const ct = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.');
  }

  decrypt(stored: string): string {
    const [v, iv, tag, ct] = stored.split('.');
    if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('not an encrypted secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(ct, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** Bullets plus the last four characters (`••••••••3456`); short secrets show bullets only. */
export function maskSecret(plain: string | null | undefined): string {
  if (!plain) return '';
  return plain.length <= 8 ? '••••••••' : `••••••••${plain.slice(-4)}`;
}
