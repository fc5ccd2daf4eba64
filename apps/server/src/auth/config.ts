/**
 * The settings of staff identity (docs/security.md): single sign-on with the school's OpenID
 * Connect provider, the password form, and the second factor. Part of the server's config schema
 * (../config.ts), checked with it at start.
 */
import { z } from 'zod';
import { issuesOn, list, lowerEnum, optional } from '../env/values.js';

/** A claim's name, or a dotted path into the claims (`realm_access.roles`). */
const claimPath = z
  .string()
  .trim()
  .regex(
    /^[A-Za-z0-9_:/-]+(\.[A-Za-z0-9_:/-]+)*$/,
    'must be a claim name or a dotted path such as realm_access.roles',
  );

/** Host names an `http://` issuer may have: the identity provider is on this machine. */
const LOOPBACK = /^(localhost|127(\.\d{1,3}){3}|\[::1\])$/i;

export const identityConfigShape = {
  /** The school's OpenID Connect provider (its discovery document is under it); unset: no single sign-on. */
  OIDC_ISSUER: optional(
    z
      .string()
      .trim()
      .refine((v) => URL.canParse(v) && /^https?:$/.test(new URL(v).protocol), {
        message: 'must be the identity provider’s https URL, e.g. https://accounts.google.com',
      })
      .refine(
        (v) => !URL.canParse(v) || new URL(v).protocol === 'https:' || LOOPBACK.test(new URL(v).hostname),
        {
          message:
            'must be https (http is accepted only for an identity provider on this machine: localhost, 127.0.0.1, [::1])',
        },
      )
      .optional(),
  ),
  OIDC_CLIENT_ID: optional(z.string().trim().optional()),
  OIDC_CLIENT_SECRET: optional(z.string().trim().optional()),
  /** The login button reads "Log in with {OIDC_LABEL}". */
  OIDC_LABEL: optional(z.string().trim().max(60).default('your school account')),
  /** Scopes asked for besides `openid profile email`. */
  OIDC_SCOPES: optional(list(/[\s,]+/).default([])),
  /** The claim whose values decide the role: a name, or a dotted path (`realm_access.roles`). */
  OIDC_ROLES_CLAIM: optional(claimPath.default('groups')),
  /** Claim values that make a user an admin. */
  OIDC_ADMIN_GROUPS: optional(list(/,/).default([])),
  /** Claim values that make a user an operator (when no admin value is there). */
  OIDC_OPERATOR_GROUPS: optional(list(/,/).default([])),
  /**
   * The claim whose values limit a user to schools, each a school's topic key, set at every
   * single sign-on; unset: schools are set on the Users page (docs/security.md#who-sees-what).
   */
  OIDC_SCHOOLS_CLAIM: optional(claimPath.optional()),
  /** Values of OIDC_SCHOOLS_CLAIM that make a user organisation-wide (every school). */
  OIDC_ALL_SCHOOLS_GROUPS: optional(list(/,/).default([])),
  /** `off`: no username and password form; password logins are refused (`pnpm admin` still works). */
  LOCAL_LOGIN: optional(lowerEnum(['on', 'off']).default('on')),
  /** Who must have a second factor for password logins: nobody, admins, or all staff. */
  REQUIRE_TOTP: optional(lowerEnum(['off', 'admins', 'all']).default('off')),
};

type IdentityValues = z.output<z.ZodObject<typeof identityConfigShape>> & {
  readonly PUBLIC_BASE_URL?: string | undefined;
};

/** What goes together: single sign-on needs its client and the public URL it returns to. */
export function checkIdentityConfig(config: IdentityValues, ctx: z.RefinementCtx): void {
  const issue = issuesOn(ctx);
  if (config.OIDC_ISSUER === undefined) {
    if (config.LOCAL_LOGIN === 'off') {
      issue('LOCAL_LOGIN', 'off needs single sign-on (OIDC_ISSUER): nobody could log in to the console');
    }
    return;
  }
  if (!config.OIDC_CLIENT_ID) issue('OIDC_CLIENT_ID', 'is required with OIDC_ISSUER');
  if (!config.OIDC_CLIENT_SECRET) issue('OIDC_CLIENT_SECRET', 'is required with OIDC_ISSUER');
  if (!config.PUBLIC_BASE_URL) {
    issue(
      'PUBLIC_BASE_URL',
      'is required with OIDC_ISSUER: the identity provider sends staff back to {PUBLIC_BASE_URL}/api/session/oidc/callback',
    );
  }
  if (config.OIDC_ALL_SCHOOLS_GROUPS.length > 0 && config.OIDC_SCHOOLS_CLAIM === undefined) {
    issue(
      'OIDC_ALL_SCHOOLS_GROUPS',
      'needs OIDC_SCHOOLS_CLAIM: its values are values of that claim (without it every user is organisation-wide)',
    );
  }
  if (config.OIDC_ADMIN_GROUPS.length === 0 && config.OIDC_OPERATOR_GROUPS.length === 0) {
    issue(
      'OIDC_OPERATOR_GROUPS',
      'or OIDC_ADMIN_GROUPS is required with OIDC_ISSUER: without either, every single sign-on is refused',
    );
  }
}

/** Whether REQUIRE_TOTP asks a second factor of a user of `role`. */
export function secondFactorRequiredFor(requireTotp: 'off' | 'admins' | 'all', role: string): boolean {
  return requireTotp === 'all' || (requireTotp === 'admins' && role === 'admin');
}
