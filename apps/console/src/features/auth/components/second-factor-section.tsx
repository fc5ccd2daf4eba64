import { totpActivateInputSchema, totpDisableInputSchema, totpStartInputSchema } from '@school/contract';
import { useRef, useState } from 'react';
import { CopyButton } from '../../../components/ui/copy-button';
import { Form, TextField } from '../../../components/ui/form';
import { CurrentPasswordField } from '../../../components/ui/password-fields';
import { namesAField, showFieldErrors } from '../../../components/ui/save-form';
import { ProblemMessage } from '../../../components/ui/status';
import { useActivateSecondFactor, useDisableSecondFactor, useStartSecondFactor } from '../api/second-factor';
import { QrCode } from './qr-code';
import '../auth.css';

/** `JBSWY3DPEHPK3PXP…` in groups of four, as authenticator apps show a key to type. */
const grouped = (secret: string) => secret.replace(/(.{4})(?=.)/g, '$1 ');

/**
 * The Account page's second factor (TOTP): set up with an authenticator app (a QR code, or the
 * key typed in), proved by a code, answered by recovery codes shown once; turned off with the
 * password.
 */
export function SecondFactorSection({ enabled, required }: { enabled: boolean; required: boolean }) {
  const start = useStartSecondFactor();
  const activate = useActivateSecondFactor();
  const disable = useDisableSecondFactor();
  const [recoveryCodes, setRecoveryCodes] = useState<string[] | null>(null);
  const [message, setMessage] = useState('');
  const enrolment = start.data;

  let body: React.ReactNode;
  if (recoveryCodes) {
    body = (
      <RecoveryCodes
        codes={recoveryCodes}
        onSaved={() => {
          setRecoveryCodes(null);
          start.reset();
        }}
      />
    );
  } else if (enabled) {
    body = <TurnOff disable={disable} say={setMessage} />;
  } else if (enrolment) {
    body = (
      <Enrolment
        enrolment={enrolment}
        activate={activate}
        onActive={setRecoveryCodes}
        onCancel={() => start.reset()}
      />
    );
  } else {
    body = <SetUp start={start} say={setMessage} />;
  }

  return (
    <section className="card" aria-labelledby="second-factor-heading">
      <h2 id="second-factor-heading">Second factor</h2>
      {required && !enabled && !recoveryCodes ? (
        <div className="status status-warning" role="alert">
          <p className="status-title">Set up a second factor to go on.</p>
          <p>Your role needs one: the rest of the console opens once it is on.</p>
        </div>
      ) : null}
      {body}
      <p role="status" className="page-status">
        {message}
      </p>
    </section>
  );
}

/** Just turned on: the recovery codes, shown this once, to copy and save. */
function RecoveryCodes({ codes, onSaved }: { codes: string[]; onSaved: () => void }) {
  const codesRef = useRef<HTMLOListElement>(null);
  return (
    <>
      <div className="status status-ok" role="status">
        <p className="status-title">Your second factor is on.</p>
        <p>
          From now on you log in with your password and a code from the app. Save these recovery codes
          somewhere safe (a password manager, or printed): each logs you in once if you lose your phone. They
          are shown only now.
        </p>
      </div>
      <ol className="recovery-codes" aria-label="Recovery codes" ref={codesRef}>
        {codes.map((code) => (
          <li key={code}>
            <code>{code}</code>
          </li>
        ))}
      </ol>
      <div className="actions">
        <CopyButton text={codes.join('\n')} label="Copy the codes" target={codesRef} />
        <button type="button" className="button button-primary" onClick={onSaved}>
          I have saved them
        </button>
      </div>
    </>
  );
}

/** On: what it does, and turning it off with the password. */
function TurnOff({
  disable,
  say,
}: {
  disable: ReturnType<typeof useDisableSecondFactor>;
  /** Says how it went in the section's status line. */
  say: (message: string) => void;
}) {
  return (
    <>
      <p>
        <span className="badge badge-ok">On</span> Each login asks for a code from your authenticator app (or
        one of your recovery codes).
      </p>
      <Form
        schema={totpDisableInputSchema}
        options={{ defaultValues: { password: '' } }}
        aria-label="Turn off the second factor"
        className="form-plain"
        onSubmit={(values, methods) => {
          say('');
          disable.mutate(values, {
            onSuccess: () => {
              methods.reset({ password: '' });
              say('Your second factor is off: your password alone logs you in.');
            },
            onError: (error) => {
              if (showFieldErrors(error, ['password'], methods)) methods.setFocus('password');
            },
          });
        }}
      >
        {() => (
          <>
            <CurrentPasswordField label="Your password, to turn it off" />
            <div className="actions">
              <button type="submit" className="button" disabled={disable.isPending}>
                {disable.isPending ? 'Turning off…' : 'Turn off the second factor'}
              </button>
            </div>
            {disable.isError && !namesAField(disable.error, ['password']) ? (
              <ProblemMessage error={disable.error} prefix="Not turned off" />
            ) : null}
          </>
        )}
      </Form>
    </>
  );
}

/** Being set up: the key for the app (a QR code, or typed in), then a code from the app to prove it. */
function Enrolment({
  enrolment,
  activate,
  onActive,
  onCancel,
}: {
  enrolment: NonNullable<ReturnType<typeof useStartSecondFactor>['data']>;
  activate: ReturnType<typeof useActivateSecondFactor>;
  /** Turned on: the recovery codes to show. */
  onActive: (recoveryCodes: string[]) => void;
  onCancel: () => void;
}) {
  return (
    <ol className="steps">
      <li>
        <p>Scan this code with an authenticator app on your phone.</p>
        <QrCode text={enrolment.otpauthUrl} label="QR code for your authenticator app" />
        <p>
          Or type this key into the app: <code className="totp-secret">{grouped(enrolment.secret)}</code>{' '}
          <CopyButton text={enrolment.secret} label="Copy the key" />
        </p>
      </li>
      <li>
        <p>Enter the 6-digit code the app now shows.</p>
        <Form
          schema={totpActivateInputSchema}
          options={{ defaultValues: { code: '' } }}
          aria-label="Turn on the second factor"
          className="form-plain"
          onSubmit={(values, methods) =>
            activate.mutate(values, {
              onSuccess: (answer) => onActive(answer.recoveryCodes),
              onError: (error) => {
                if (showFieldErrors(error, ['code'], methods)) methods.setFocus('code');
              },
            })
          }
        >
          {() => (
            <>
              <TextField
                name="code"
                label="Code from the app"
                autoComplete="one-time-code"
                inputMode="numeric"
                autoFocus
              />
              <div className="actions">
                <button type="submit" className="button button-primary" disabled={activate.isPending}>
                  {activate.isPending ? 'Checking…' : 'Turn on'}
                </button>
                <button type="button" className="button" onClick={onCancel}>
                  Cancel
                </button>
              </div>
              {activate.isError && !namesAField(activate.error, ['code']) ? (
                <ProblemMessage error={activate.error} prefix="Not turned on" />
              ) : null}
            </>
          )}
        </Form>
      </li>
    </ol>
  );
}

/** Off: what a second factor is for, and starting to set one up with the password. */
function SetUp({
  start,
  say,
}: {
  start: ReturnType<typeof useStartSecondFactor>;
  /** Says how it went in the section's status line. */
  say: (message: string) => void;
}) {
  return (
    <>
      <p>
        <span className="badge badge-neutral">Off</span> With a second factor, a stolen password is not
        enough: each login also asks for a code from an authenticator app on your phone (Google Authenticator,
        Microsoft Authenticator, 1Password and the like).
      </p>
      <Form
        schema={totpStartInputSchema}
        options={{ defaultValues: { password: '' } }}
        aria-label="Set up a second factor"
        className="form-plain"
        onSubmit={(values, methods) => {
          say('');
          start.mutate(values, {
            onError: (error) => {
              if (showFieldErrors(error, ['password'], methods)) methods.setFocus('password');
            },
          });
        }}
      >
        {() => (
          <>
            {/* A session alone (a cookie someone took) must not be able to put a second factor in front of the owner. */}
            <CurrentPasswordField label="Your password, to set one up" />
            <div className="actions">
              <button type="submit" className="button button-primary" disabled={start.isPending}>
                {start.isPending ? 'Starting…' : 'Set up a second factor'}
              </button>
            </div>
            {start.isError && !namesAField(start.error, ['password']) ? (
              <ProblemMessage error={start.error} prefix="Could not start" />
            ) : null}
          </>
        )}
      </Form>
    </>
  );
}
