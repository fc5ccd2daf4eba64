import { useEffect, useId, useRef, useState } from 'react';
import { Link, useLocation } from 'react-router';
import { ProblemMessage } from '../../../components/ui/status';
import { paths } from '../../../config/paths';
import { ROLE_NAMES } from '../../../lib/format';
import { useSession } from '../../../lib/session';
import { localTimeZoneName, setTimeZoneSetting, useTimeZoneSetting } from '../../../lib/time-zone';
import { useLogout } from '../api/logout';
import '../user-menu.css';

/**
 * The header's menu of the person logged in: their name and role (the name whole inside, however
 * short the button cuts it), whether times show in their own zone or UTC (kept in this browser),
 * Account and security (password, second factor) and Log out. A disclosure (a button that shows a
 * short list), closed by Escape, a click elsewhere or moving on.
 */
export function UserMenu() {
  const user = useSession().data?.user;
  const location = useLocation();
  const [open, setOpen] = useState(false);
  const menuId = useId();
  const root = useRef<HTMLDivElement>(null);
  const button = useRef<HTMLButtonElement>(null);
  const logout = useLogout();
  const zone = useTimeZoneSetting();

  // Closed on every page change; `location.key` changes on each navigation.
  useEffect(() => setOpen(false), [location.key]);

  useEffect(() => {
    if (!open) return;
    const outside = (event: MouseEvent | FocusEvent) => {
      if (!root.current?.contains(event.target as Node)) setOpen(false);
    };
    const onEscape = (event: KeyboardEvent) => {
      if (event.key !== 'Escape') return;
      setOpen(false);
      button.current?.focus();
    };
    document.addEventListener('mousedown', outside);
    document.addEventListener('focusin', outside);
    document.addEventListener('keydown', onEscape);
    return () => {
      document.removeEventListener('mousedown', outside);
      document.removeEventListener('focusin', outside);
      document.removeEventListener('keydown', onEscape);
    };
  }, [open]);

  if (!user) return null;
  return (
    <div className="user-menu" ref={root}>
      <button
        ref={button}
        type="button"
        className="user-menu-button"
        aria-expanded={open}
        aria-controls={menuId}
        onClick={() => setOpen((was) => !was)}
      >
        {/* Cut short when the header has no room for it: the title shows it whole on hover, and
            the open menu and the Account page show it whole. */}
        <span className="user-name" title={user.displayName}>
          {user.displayName}
        </span>{' '}
        <span className="user-role">{ROLE_NAMES[user.role]}</span>
        <span className="user-menu-arrow" aria-hidden="true">
          ▾
        </span>
      </button>
      <div id={menuId} className="user-menu-panel" hidden={!open}>
        <p className="user-menu-who">
          <span className="user-menu-display-name">{user.displayName}</span>
          Logged in as <strong>{user.username}</strong>
        </p>
        <fieldset className="user-menu-times">
          <legend>Show times in</legend>
          <label>
            <input
              type="radio"
              name={`${menuId}-zone`}
              checked={zone === 'local'}
              onChange={() => setTimeZoneSetting('local')}
            />{' '}
            Local time <span className="muted">({localTimeZoneName()})</span>
          </label>
          <label>
            <input
              type="radio"
              name={`${menuId}-zone`}
              checked={zone === 'utc'}
              onChange={() => setTimeZoneSetting('utc')}
            />{' '}
            UTC
          </label>
        </fieldset>
        <ul>
          <li>
            <Link to={paths.account.href()} className="user-menu-item">
              Account and security
            </Link>
          </li>
          <li>
            <button
              type="button"
              className="user-menu-item"
              onClick={() => logout.mutate()}
              disabled={logout.isPending}
            >
              {logout.isPending ? 'Logging out…' : 'Log out'}
            </button>
          </li>
        </ul>
        {logout.isError ? <ProblemMessage error={logout.error} prefix="Not logged out" /> : null}
      </div>
    </div>
  );
}
