/** Log in with a project token: it opens a session cookie and is then forgotten. */
import { useState, type FormEvent } from 'react';
import { useMessages } from './i18n.ts';

export function Login({ onLogin }: { onLogin: (token: string) => Promise<void> }) {
  const t = useMessages();
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
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setRunning(false);
    }
  };

  return (
    <form className="login panel" onSubmit={(event) => void submit(event)}>
      <h1>{t.logIn}</h1>
      <label htmlFor="token">{t.tokenLabel}</label>
      <input
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
