/** Log in with a project token: it opens a session cookie and is then forgotten. */
import { useEffect, useRef, useState, type FormEvent } from 'react';
import { failureText } from './failure.ts';
import { useMessages } from './i18n.ts';

/**
 * `ended`: the page came back here because the session ended (it expired, was ended in another
 * tab, or its token was revoked). The form says so, and the focus, whose control is gone, goes
 * to the token field.
 */
export function Login({ onLogin, ended }: { onLogin: (token: string) => Promise<void>; ended: boolean }) {
  const t = useMessages();
  const field = useRef<HTMLInputElement>(null);
  useEffect(() => {
    if (ended) field.current?.focus();
  }, [ended]);
  const [token, setToken] = useState('');
  const [error, setError] = useState<string | null>(null);
  const [running, setRunning] = useState(false);

  const submit = async (event: FormEvent) => {
    event.preventDefault();
    setRunning(true);
    setError(null);
    try {
      await onLogin(token.trim());
      setToken('');
    } catch (failure) {
      setError(failureText(t, failure));
    } finally {
      setRunning(false);
    }
  };

  return (
    <form className="login panel" onSubmit={(event) => void submit(event)}>
      <h1>{t.logIn}</h1>
      {ended && (
        <p className="notice" role="alert">
          {t.sessionEnded}
        </p>
      )}
      <label htmlFor="token">{t.tokenLabel}</label>
      <input
        ref={field}
        id="token"
        type="password"
        autoComplete="off"
        spellCheck={false}
        required
        value={token}
        aria-describedby="token-help"
        onChange={(event) => setToken(event.target.value)}
      />
      <p id="token-help" className="hint">
        {t.tokenHelp}
      </p>
      {error && (
        <p className="error" role="alert">
          {t.loginFailed}: {error}
        </p>
      )}
      <button type="submit" className="primary" disabled={running}>
        {t.logIn}
      </button>
    </form>
  );
}
