import { createHash } from 'node:crypto';
import type { Role } from '@school/contract';
import { safeNextPath, usernameSchema } from '@school/contract';
import * as client from 'openid-client';
import type { Sealer } from '../secrets/sealer.js';

/**
 * Single sign-on with the school's OpenID Connect provider (docs/security.md#single-sign-on): the
 * authorization code flow with PKCE, `state` and `nonce`, the ID token checked by openid-client
 * (issuer, audience, expiry, the issuer's signature). The role comes from a claim at every login,
 * and so do the schools the user is limited to when OIDC_SCHOOLS_CLAIM is set.
 */

export interface SsoSettings {
  readonly issuer: string;
  readonly clientId: string;
  readonly clientSecret: string;
  readonly label: string;
  readonly scopes: readonly string[];
  readonly rolesClaim: string;
  readonly adminGroups: readonly string[];
  readonly operatorGroups: readonly string[];
  /** OIDC_SCHOOLS_CLAIM: the claim naming the user's schools by topic key; undefined: not read. */
  readonly schoolsClaim?: string | undefined;
  /** `{PUBLIC_BASE_URL}/api/session/oidc/callback`. */
  readonly redirectUri: string;
}

/** Who the identity provider says logged in, and the role the claim gives them (null: none). */
export interface SsoIdentity {
  /** `{issuer} {sub}`: the account, whatever its names become. */
  readonly subject: string;
  readonly username: string;
  readonly displayName: string;
  readonly role: Role | null;
  /** The roles claim's values, as the provider sent them (for the audit entry of a refusal). */
  readonly claimValues: readonly string[];
  /**
   * The schools claim's values as the provider sent them (none when it sent none); undefined when
   * OIDC_SCHOOLS_CLAIM is not set. What they map to is the caller's to decide (schoolsOf).
   */
  readonly schoolValues?: readonly string[] | undefined;
}

/** A sign-on that could not finish; `outcome` is what the login page tells (SSO_OUTCOMES). */
export class SsoError extends Error {
  override name = 'SsoError';
  constructor(
    readonly outcome: 'failed' | 'unavailable',
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

export interface SingleSignOn {
  readonly label: string;
  /** Where to send the browser, and the flow's value for the cookie that comes back with it. */
  begin(next: string): Promise<{ url: string; flow: string }>;
  /** Finishes the flow the callback URL carries: the identity, and where the user was going. */
  complete(callbackUrl: URL, flow: string | undefined): Promise<{ identity: SsoIdentity; next: string }>;
}

/** The flow cookie's life: a login page left open longer starts again. */
export const FLOW_TTL_MS = 10 * 60_000;
const FLOW_CONTEXT = 'oidc-flow';
const BASE_SCOPES = ['openid', 'profile', 'email'];

interface Flow {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  readonly next: string;
  readonly until: number;
}

export function createSingleSignOn(settings: SsoSettings, sealer: Sealer): SingleSignOn {
  const issuerUrl = new URL(settings.issuer);
  // config.ts accepts http only for a provider on this machine (tests, a local Keycloak).
  const insecure = issuerUrl.protocol === 'http:';
  let discovered: Promise<client.Configuration> | undefined;
  /** The provider's metadata and keys, fetched at the first login and kept; fetched again after a failure. */
  const configuration = (): Promise<client.Configuration> => {
    discovered ??= client
      .discovery(issuerUrl, settings.clientId, settings.clientSecret, undefined, {
        timeout: 10,
        ...(insecure ? { execute: [client.allowInsecureRequests] } : {}),
      })
      .catch((err: unknown) => {
        discovered = undefined;
        throw new SsoError('unavailable', `discovery at ${settings.issuer} failed: ${messageOf(err)}`, {
          cause: err,
        });
      });
    return discovered;
  };
  const scope = [...new Set([...BASE_SCOPES, ...settings.scopes])].join(' ');

  return {
    label: settings.label,
    async begin(next) {
      const config = await configuration();
      const verifier = client.randomPKCECodeVerifier();
      const flow: Flow = {
        state: client.randomState(),
        nonce: client.randomNonce(),
        verifier,
        next: safeNext(next),
        until: Date.now() + FLOW_TTL_MS,
      };
      const url = client.buildAuthorizationUrl(config, {
        redirect_uri: settings.redirectUri,
        scope,
        response_type: 'code',
        code_challenge: await client.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state: flow.state,
        nonce: flow.nonce,
      });
      return { url: url.href, flow: sealer.seal(JSON.stringify(flow), FLOW_CONTEXT) };
    },
    async complete(callbackUrl, sealedFlow) {
      const flow = openFlow(sealer, sealedFlow);
      const config = await configuration();
      let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
      try {
        tokens = await client.authorizationCodeGrant(config, callbackUrl, {
          pkceCodeVerifier: flow.verifier,
          expectedState: flow.state,
          expectedNonce: flow.nonce,
          idTokenExpected: true,
        });
      } catch (err) {
        throw new SsoError('failed', `the provider's answer was refused: ${messageOf(err)}`, { cause: err });
      }
      const idToken = tokens.claims();
      if (!idToken) throw new SsoError('failed', 'the provider sent no ID token');
      let claims: Record<string, unknown> & { sub: string } = idToken;
      // Some providers put the groups (and names) only in the UserInfo answer when they issue an
      // access token (as the spec has it): what the ID token lacks is read from there.
      const lacks = (path: string | undefined) =>
        path !== undefined && claimValues(claims, path) === undefined;
      if ((lacks(settings.rolesClaim) || lacks(settings.schoolsClaim)) && tokens.access_token) {
        try {
          const info = await client.fetchUserInfo(config, tokens.access_token, idToken.sub);
          claims = { ...info, ...idToken };
        } catch (err) {
          throw new SsoError('failed', `the provider's UserInfo could not be read: ${messageOf(err)}`, {
            cause: err,
          });
        }
      }
      // An address the provider has not verified says nothing of who logged in.
      const trusted = (path: string) =>
        path === 'email' && claims.email_verified === false ? [] : claimValues(claims, path);
      const values = trusted(settings.rolesClaim);
      const schools =
        settings.schoolsClaim === undefined ? undefined : (trusted(settings.schoolsClaim) ?? []);
      const identity: SsoIdentity = {
        subject: `${idToken.iss} ${idToken.sub}`,
        username: usernameOf(claims),
        displayName: displayNameOf(claims),
        role: roleOf(values ?? [], settings),
        claimValues: (values ?? []).slice(0, 50),
        ...(schools === undefined ? {} : { schoolValues: schools.slice(0, 200) }),
      };
      return { identity, next: flow.next };
    },
  };
}

function openFlow(sealer: Sealer, sealed: string | undefined): Flow {
  if (!sealed)
    throw new SsoError('failed', 'the sign-in cookie is missing (cookies off, or another browser)');
  let flow: Flow;
  try {
    flow = JSON.parse(sealer.open(sealed, FLOW_CONTEXT)) as Flow;
  } catch {
    throw new SsoError('failed', 'the sign-in cookie does not open');
  }
  if (!(flow.until > Date.now())) throw new SsoError('failed', 'the sign-in took longer than 10 minutes');
  return flow;
}

/** The claim at `path` (`groups`, `realm_access.roles`) as strings; undefined when absent. */
export function claimValues(claims: Record<string, unknown>, path: string): string[] | undefined {
  let value: unknown = claims;
  for (const part of path.split('.')) {
    if (value === null || typeof value !== 'object' || !Object.hasOwn(value, part)) return undefined;
    value = (value as Record<string, unknown>)[part];
  }
  if (typeof value === 'string') return [value];
  if (typeof value === 'boolean' || typeof value === 'number') return [String(value)];
  if (Array.isArray(value)) return value.filter((v): v is string => typeof v === 'string');
  return undefined;
}

/** An admin group wins over an operator group; neither: no role. Values compare case-insensitively. */
export function roleOf(
  values: readonly string[],
  groups: { readonly adminGroups: readonly string[]; readonly operatorGroups: readonly string[] },
): Role | null {
  const have = new Set(values.map((v) => v.toLowerCase()));
  const any = (list: readonly string[]) => list.some((g) => have.has(g.toLowerCase()));
  if (any(groups.adminGroups)) return 'admin';
  if (any(groups.operatorGroups)) return 'operator';
  return null;
}

/**
 * The schools a sign-on's OIDC_SCHOOLS_CLAIM values give (docs/security.md#who-sees-what):
 * `every` when one is in OIDC_ALL_SCHOOLS_GROUPS (compared without regard to case), else the ids
 * of the schools whose topic key is one of them exactly (topic keys are told apart by case), else
 * `none`: values that name no school never grant anything.
 */
export function schoolsOf(
  values: readonly string[],
  allSchoolsGroups: readonly string[],
  schools: readonly { readonly id: number; readonly topic_key: string }[],
): 'every' | 'none' | number[] {
  const have = new Set(values.map((v) => v.trim()));
  const lower = new Set([...have].map((v) => v.toLowerCase()));
  if (allSchoolsGroups.some((g) => lower.has(g.toLowerCase()))) return 'every';
  const ids = schools.filter((s) => have.has(s.topic_key)).map((s) => s.id);
  return ids.length > 0 ? ids : 'none';
}

/**
 * The console username of a school account: `preferred_username`, else `email`, lower case, with
 * what a username may not hold made a dot; else one made from the subject.
 */
export function usernameOf(claims: { sub: string; preferred_username?: unknown; email?: unknown }): string {
  for (const candidate of [claims.preferred_username, claims.email]) {
    if (typeof candidate !== 'string') continue;
    // Compatibility forms folded (NFKC: full-width letters, ligatures); then a name holding an
    // invisible, format, control or combining character (`admin\u200b`; `adminİ`, whose lower case
    // is i and a combining dot) is not taken at all: it would become a lookalike of another
    // (`admin.`, `admini.`). Other characters become dots (`Zoë Brown` → `zo.brown`).
    const folded = candidate.normalize('NFKC').trim().toLowerCase();
    if (/[\p{Cf}\p{Cc}\p{M}\p{Zl}\p{Zp}]/u.test(folded)) continue;
    const name = folded.replace(/[^a-z0-9._@-]+/g, '.').slice(0, 64);
    if (usernameSchema.safeParse(name).success) return name;
  }
  return `sso-${createHash('sha256').update(claims.sub).digest('hex').slice(0, 12)}`;
}

function displayNameOf(claims: Record<string, unknown>): string {
  const parts = [claims.given_name, claims.family_name].filter((p) => typeof p === 'string' && p.trim());
  const name =
    typeof claims.name === 'string' && claims.name.trim()
      ? claims.name
      : parts.length > 0
        ? parts.join(' ')
        : usernameOf(claims as { sub: string });
  return name.trim().slice(0, 100);
}

/** A path on this site to go back to after logging in: `/calls?x=1`; anything else: `/`. */
export function safeNext(next: string | undefined): string {
  if (next === undefined || next.length > 2000) return '/';
  // Any origin does: the path must stay on whichever it is resolved against.
  return safeNextPath(next, 'http://console.invalid') ?? '/';
}

function messageOf(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const code = (err as { code?: unknown })?.code;
  return (typeof code === 'string' ? `${code}: ${text}` : text).slice(0, 300);
}
