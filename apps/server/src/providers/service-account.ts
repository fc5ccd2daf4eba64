import { createPrivateKey } from 'node:crypto';
import fs from 'node:fs';

/** The fields of a Google service-account key file (JSON) that FCM needs. */
export interface ServiceAccount {
  readonly projectId: string;
  readonly clientEmail: string;
  /** PEM, PKCS#8 as Google issues it. */
  readonly privateKey: string;
  /** The key's id; not sent (google-auth-library's assertion has no `kid`: Google's endpoint needs none). */
  readonly privateKeyId?: string;
  /** Where the JWT-bearer grant is posted (normally https://oauth2.googleapis.com/token). */
  readonly tokenUri?: string;
}

export class ServiceAccountError extends Error {
  override name = 'ServiceAccountError';
}

/**
 * Reads and checks a service-account file, at start (the configuration's check and the provider's
 * creation), so that a wrong file stops the server with a message naming it rather than failing
 * pushes later; the token is google-auth-library's (./google-token.ts). The messages say what is
 * wrong without quoting the file (it holds a private key).
 */
export function readServiceAccount(file: string): ServiceAccount {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (error) {
    const code = (error as { code?: string }).code ?? 'unknown error';
    throw new ServiceAccountError(`cannot read ${file} (${code})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new ServiceAccountError(`${file} is not JSON (expected a service-account key file)`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    throw new ServiceAccountError(`${file} is not a JSON object (expected a service-account key file)`);
  }
  const record = json as Record<string, unknown>;
  if (record.type !== undefined && record.type !== 'service_account') {
    throw new ServiceAccountError(
      `${file} has type ${JSON.stringify(record.type)}, expected "service_account"`,
    );
  }
  const missing = ['project_id', 'client_email', 'private_key'].filter(
    (field) => typeof record[field] !== 'string' || (record[field] as string).trim() === '',
  );
  if (missing.length > 0) throw new ServiceAccountError(`${file} lacks ${missing.join(', ')}`);
  const privateKey = record.private_key as string;
  try {
    const key = createPrivateKey(privateKey);
    if (key.asymmetricKeyType !== 'rsa') throw new Error('not RSA');
  } catch {
    throw new ServiceAccountError(`${file}: private_key is not an RSA private key in PEM form`);
  }
  const tokenUri = typeof record.token_uri === 'string' ? record.token_uri : undefined;
  if (tokenUri !== undefined && !/^https?:\/\//i.test(tokenUri)) {
    throw new ServiceAccountError(`${file}: token_uri is not an http(s) URL`);
  }
  return {
    projectId: record.project_id as string,
    clientEmail: record.client_email as string,
    privateKey,
    ...(typeof record.private_key_id === 'string' ? { privateKeyId: record.private_key_id } : {}),
    ...(tokenUri !== undefined ? { tokenUri } : {}),
  };
}
