/**
 * Staff accounts, sessions and the audit log, as zod schemas shared by the server's routes and the
 * console's forms (docs/security.md).
 */
import { z } from 'zod';

export const ROLES = ['admin', 'operator'] as const;
export const roleSchema = z.enum(ROLES);
export type Role = z.infer<typeof roleSchema>;

/** What each role may do, in words, for the Users page. */
export const ROLE_LABELS: Record<Role, string> = {
  admin: 'Admin — everything, including schools, templates, books, users and the audit log',
  operator: 'Operator — send, history, deliveries, dashboard and service',
};

/**
 * The schools a user is limited to, by id: null (or, as input, absent or empty) is
 * organisation-wide, every school (docs/security.md#who-sees-what).
 */
export const schoolIdsSchema = z
  .array(z.number().int().positive())
  .max(1000)
  .describe('The ids of the schools the user is limited to; empty or null: every school.');

/** What the Users page and the console say of a user's schools when they are not limited. */
export const ALL_SCHOOLS = 'All schools';

export const PASSWORD_MIN = 10;
export const PASSWORD_MAX = 256;

export const usernameSchema = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9._@-]{2,64}$/, 'Use 2 to 64 letters, digits, dots, dashes, underscores or @.');

export const passwordSchema = z
  .string()
  .min(PASSWORD_MIN, `Use at least ${PASSWORD_MIN} characters.`)
  .max(PASSWORD_MAX, `Use at most ${PASSWORD_MAX} characters.`);

export const displayNameSchema = z.string().trim().min(1, 'Give a display name.').max(100);

/**
 * `POST /api/session`: log in. A user with a second factor also gives `code`: the 6 digits their
 * authenticator app shows now, or one of their recovery codes.
 */
export const loginInputSchema = z.object({
  username: z.string().trim().min(1, 'Enter your username.').max(64),
  password: z.string().min(1, 'Enter your password.').max(PASSWORD_MAX),
  code: z.string().trim().max(32).optional(),
});
export type LoginInput = z.input<typeof loginInputSchema>;

/** How a session was opened: a password (and second factor) here, or the school's single sign-on. */
export const SESSION_METHODS = ['password', 'sso'] as const;

/** `GET /api/session/login-options`: what the login page offers. */
export const loginOptionsSchema = z
  .object({
    /** The username and password form (`LOCAL_LOGIN`). */
    localLogin: z.boolean(),
    /** Single sign-on with the school's identity provider, when set up: its button's name. */
    sso: z.object({ label: z.string() }).nullable(),
  })
  .meta({ id: 'LoginOptions' });
export type LoginOptions = z.infer<typeof loginOptionsSchema>;

/**
 * Why a single sign-on did not open a session: the `sso` query parameter of the login page it
 * returns to, and what that page says.
 */
export const SSO_OUTCOMES = {
  refused:
    'Your school account is not allowed to use this console: it is in none of the staff groups that may. Ask the school’s IT to add you to one.',
  'no-school':
    'Your school account names no school this console serves, so you cannot be let in: ask the school’s IT to add you to your school’s group.',
  disabled: 'Your console account is disabled. Ask an admin to enable it.',
  conflict:
    'A console user with the same username already exists, made here rather than by the school’s sign-in. Ask an admin to rename or disable it.',
  failed: 'The school’s sign-in did not complete. Try again.',
  unavailable: 'The school’s sign-in service could not be reached. Try again in a moment.',
} as const;
export type SsoOutcome = keyof typeof SSO_OUTCOMES;

/** Who is logged in (`GET /api/session`, and the answer to a login). */
export const sessionSchema = z
  .object({
    user: z.object({
      id: z.number().int(),
      username: z.string(),
      displayName: z.string(),
      role: roleSchema,
      /** The schools the user is limited to, by id; null: organisation-wide (every school). */
      schoolIds: z.array(z.number().int()).nullable(),
    }),
    /** ISO 8601: the session ends at the earlier of these unless used again before `idleExpiresAt`. */
    idleExpiresAt: z.string(),
    expiresAt: z.string(),
    method: z.enum(SESSION_METHODS),
    secondFactor: z.object({
      /** A second factor (TOTP) is set up for the user's password logins. */
      enabled: z.boolean(),
      /**
       * `REQUIRE_TOTP` asks one of this user, and this session was opened with a password: until
       * one is set up, the API answers 403 to everything but setting it up.
       */
      required: z.boolean(),
    }),
  })
  .meta({ id: 'Session' });
export type Session = z.infer<typeof sessionSchema>;

/** `PUT /api/session/password`: change one's own password; other sessions of the user end. */
export const passwordChangeInputSchema = z.object({
  currentPassword: z.string().min(1, 'Enter your current password.').max(PASSWORD_MAX),
  newPassword: passwordSchema,
});
export type PasswordChangeInput = z.input<typeof passwordChangeInputSchema>;

/** `POST /api/session/totp`: a second factor being set up, for the authenticator app. */
export const totpEnrolmentSchema = z
  .object({
    /** The secret in base32, for typing in when the QR code cannot be scanned. */
    secret: z.string(),
    /** `otpauth://totp/…`: what the QR code holds. */
    otpauthUrl: z.string(),
  })
  .meta({ id: 'TotpEnrolment' });
export type TotpEnrolment = z.infer<typeof totpEnrolmentSchema>;

export const totpCodeSchema = z
  .string()
  .trim()
  .regex(/^\d{3} ?\d{3}$/, 'Enter the 6 digits your authenticator app shows.');

/** `PUT /api/session/totp`: the code the app shows, proving it was set up; turns the second factor on. */
export const totpActivateInputSchema = z.object({ code: totpCodeSchema });
export type TotpActivateInput = z.input<typeof totpActivateInputSchema>;

/** The answer to `PUT /api/session/totp`: single-use codes for when the app is lost, shown once. */
export const recoveryCodesSchema = z
  .object({ recoveryCodes: z.array(z.string()) })
  .meta({ id: 'RecoveryCodes' });
export type RecoveryCodes = z.infer<typeof recoveryCodesSchema>;

/** `DELETE /api/session/totp`: turns one's second factor off; the password confirms it. */
export const totpDisableInputSchema = z.object({
  password: z.string().min(1, 'Enter your password.').max(PASSWORD_MAX),
});
export type TotpDisableInput = z.input<typeof totpDisableInputSchema>;

/** `POST /api/session/totp`: the password again, so that a stolen session cannot set one up. */
export const totpStartInputSchema = totpDisableInputSchema;
export type TotpStartInput = z.input<typeof totpStartInputSchema>;

/** `GET /api/setup`: whether the first admin still has to be made (no user exists yet). */
export const setupStateSchema = z.object({ needed: z.boolean() }).meta({ id: 'SetupState' });
export type SetupState = z.infer<typeof setupStateSchema>;

/** `POST /api/setup`: make the first admin with the one-time token the server logged; logs in. */
export const setupInputSchema = z.object({
  token: z.string().min(1).max(200),
  username: usernameSchema,
  displayName: displayNameSchema,
  password: passwordSchema,
});
export type SetupInput = z.input<typeof setupInputSchema>;

export const userSchema = z
  .object({
    id: z.number().int(),
    username: z.string(),
    displayName: z.string(),
    role: roleSchema,
    disabled: z.boolean(),
    createdAt: z.string(),
    updatedAt: z.string(),
    /** ISO 8601, or null when the user has never logged in. */
    lastLoginAt: z.string().nullable(),
    /** A second factor (TOTP) is set up. */
    secondFactor: z.boolean(),
    /** Made by single sign-on: logs in with the school's account, has no password here. */
    sso: z.boolean(),
    /** Who the user is at the school's identity provider (its subject), to tell lookalike names apart. */
    ssoSubject: z.string().nullable(),
    /** The schools the user is limited to, by id; null: organisation-wide (every school). */
    schoolIds: z.array(z.number().int()).nullable(),
  })
  .meta({ id: 'User' });
export type User = z.infer<typeof userSchema>;

export const userListSchema = z.object({ items: z.array(userSchema) }).meta({ id: 'UserList' });
export type UserList = z.infer<typeof userListSchema>;

/** `POST /api/users` (admins). */
export const userCreateInputSchema = z.object({
  username: usernameSchema,
  displayName: displayNameSchema,
  password: passwordSchema,
  role: roleSchema,
  schoolIds: schoolIdsSchema.nullish(),
});
export type UserCreateInput = z.input<typeof userCreateInputSchema>;

/**
 * `PATCH /api/users/{id}` (admins): any of these. A new password ends the user's sessions, as does
 * disabling. The last enabled organisation-wide admin can be neither disabled, made an operator,
 * nor limited to schools. `schoolIds` empty or null: every school.
 */
export const userUpdateInputSchema = z
  .object({
    displayName: displayNameSchema.optional(),
    role: roleSchema.optional(),
    disabled: z.boolean().optional(),
    password: passwordSchema.optional(),
    schoolIds: schoolIdsSchema.nullish(),
  })
  .refine((v) => Object.values(v).some((x) => x !== undefined), 'Change at least one field.');
export type UserUpdateInput = z.input<typeof userUpdateInputSchema>;

export const AUDIT_ACTIONS = [
  'login',
  'login-failed',
  'logout',
  'setup',
  'password-change',
  'send',
  'book-upload',
  'book-delete',
  'school-create',
  'school-update',
  'school-delete',
  'template-create',
  'template-update',
  'template-delete',
  'delivery-retry',
  'delivery-retry-dead',
  'user-create',
  'user-update',
  'sso-login',
  'sso-refused',
  'totp-enable',
  'totp-disable',
  'totp-reset',
  'sessions-revoke',
  'privacy-report',
  'privacy-erase',
] as const;
export const auditActionSchema = z.enum(AUDIT_ACTIONS);
export type AuditAction = z.infer<typeof auditActionSchema>;

/** Human names for audit actions, for the Audit page. */
export const AUDIT_ACTION_LABELS: Record<AuditAction, string> = {
  login: 'Logged in',
  'login-failed': 'Failed login',
  logout: 'Logged out',
  setup: 'First admin created',
  'password-change': 'Changed own password',
  send: 'Sent from the console',
  'book-upload': 'Uploaded a book',
  'book-delete': 'Deleted a book',
  'school-create': 'Added a school',
  'school-update': 'Changed a school',
  'school-delete': 'Deleted a school',
  'template-create': 'Added a template',
  'template-update': 'Changed a template',
  'template-delete': 'Deleted a template',
  'delivery-retry': 'Retried a delivery',
  'delivery-retry-dead': 'Retried all dead deliveries',
  'user-create': 'Added a user',
  'user-update': 'Changed a user',
  'sso-login': 'Logged in with single sign-on',
  'sso-refused': 'Refused a single sign-on',
  'totp-enable': 'Turned on a second factor',
  'totp-disable': 'Turned off own second factor',
  'totp-reset': 'Reset a user’s second factor',
  'sessions-revoke': 'Ended a user’s sessions',
  'privacy-report': 'Reported what is held about a phone number',
  'privacy-erase': 'Erased a phone number',
};

export const auditEntrySchema = z
  .object({
    id: z.number().int(),
    /** ISO 8601. */
    at: z.string(),
    /** The staff user who acted; null for a failed login with an unknown username. */
    userId: z.number().int().nullable(),
    /** As typed at login for failures; the user's name otherwise. */
    username: z.string().nullable(),
    ip: z.string(),
    action: auditActionSchema,
    /** What was acted on, in words: `school 3 (Example School)`, `call 42`, `user 2 (ana)`. */
    target: z.string().nullable(),
    /** What changed: field → { from, to } for changes, or facts of the action. Secrets never. */
    details: z.record(z.string(), z.unknown()).nullable(),
  })
  .meta({ id: 'AuditEntry' });
export type AuditEntry = z.infer<typeof auditEntrySchema>;

const isoDate = z.iso.datetime({ offset: true }).describe('ISO 8601 date and time');

export const auditQuerySchema = z.object({
  /** Username (exact, case-insensitive). */
  user: z.string().max(64).optional(),
  action: auditActionSchema.optional(),
  from: isoDate.optional(),
  to: isoDate.optional(),
  limit: z.coerce.number().int().min(1).max(200).default(50),
  cursor: z.string().max(40).optional(),
});
export type AuditQuery = z.input<typeof auditQuerySchema>;

export const auditListSchema = z
  .object({ items: z.array(auditEntrySchema), nextCursor: z.string().nullable() })
  .meta({ id: 'AuditList' });
export type AuditList = z.infer<typeof auditListSchema>;

/**
 * The header the console sends with every state-changing request (a custom header makes the
 * browser preflight a cross-origin request, which the server never approves).
 */
export const CSRF_HEADER = 'x-requested-with';
export const CSRF_HEADER_VALUE = 'school-console';
