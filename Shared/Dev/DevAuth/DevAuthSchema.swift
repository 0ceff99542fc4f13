import Postgres

/// The embedded auth server's accounts, in tables of its own (migrations 900–919): users and
/// their passwords (Argon2id), identities (e-mail, Apple), sessions and their refresh tokens
/// (SHA-256 of the opaque token, never the token). Deleting a user deletes the rest with it.
public enum DevAuthSchema {
    public static let migrations: [PostgresMigration] = [
        PostgresMigration(version: 900, name: "dev_auth_accounts", sql: """
            CREATE TABLE IF NOT EXISTS auth_users (
                id uuid PRIMARY KEY,
                email text UNIQUE,
                encrypted_password text,
                email_confirmed_at timestamptz,
                app_metadata jsonb NOT NULL DEFAULT '{}',
                user_metadata jsonb NOT NULL DEFAULT '{}',
                last_sign_in_at timestamptz,
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE TABLE IF NOT EXISTS auth_identities (
                id uuid PRIMARY KEY,
                user_id uuid NOT NULL REFERENCES auth_users (id) ON DELETE CASCADE,
                provider text NOT NULL,
                provider_id text NOT NULL,
                identity_data jsonb NOT NULL DEFAULT '{}',
                email text,
                last_sign_in_at timestamptz,
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now(),
                UNIQUE (provider, provider_id)
            );
            CREATE INDEX IF NOT EXISTS auth_identities_user ON auth_identities (user_id);
            CREATE TABLE IF NOT EXISTS auth_sessions (
                id uuid PRIMARY KEY,
                user_id uuid NOT NULL REFERENCES auth_users (id) ON DELETE CASCADE,
                amr_method text NOT NULL,
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX IF NOT EXISTS auth_sessions_user ON auth_sessions (user_id);
            CREATE TABLE IF NOT EXISTS auth_refresh_tokens (
                id bigserial PRIMARY KEY,
                token_hash text NOT NULL UNIQUE,
                session_id uuid NOT NULL REFERENCES auth_sessions (id) ON DELETE CASCADE,
                parent bigint,
                revoked boolean NOT NULL DEFAULT false,
                created_at timestamptz NOT NULL DEFAULT now(),
                updated_at timestamptz NOT NULL DEFAULT now()
            );
            CREATE INDEX IF NOT EXISTS auth_refresh_tokens_session ON auth_refresh_tokens (session_id, id);
            """),
    ]
}
