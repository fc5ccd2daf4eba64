import { PASSWORD_MIN } from '@school/contract';
import type { ReactNode } from 'react';
import { TextField } from './form';

/** A new password's rule in words, under its field; the contract's `passwordSchema` checks it. */
export const NEW_PASSWORD_HINT = `At least ${PASSWORD_MIN} characters.`;

/** A password typed to prove who one is (logging in, changing it, turning the second factor off). */
export function CurrentPasswordField({ name = 'password', label }: { name?: string; label: ReactNode }) {
  return <TextField name={name} label={label} type="password" autoComplete="current-password" />;
}

/**
 * A new password with its rule, then the same again in `confirm` (the form's schema checks that
 * they match with `samePasswords`, lib/passwords.ts). `new-password` lets a password manager
 * offer one.
 */
export function NewPasswordFields({
  name = 'password',
  label = 'New password',
  confirmLabel = 'Confirm new password',
}: {
  name?: string;
  label?: ReactNode;
  confirmLabel?: ReactNode;
}) {
  return (
    <>
      <TextField
        name={name}
        label={label}
        description={NEW_PASSWORD_HINT}
        type="password"
        autoComplete="new-password"
      />
      <TextField name="confirm" label={confirmLabel} type="password" autoComplete="new-password" />
    </>
  );
}
