extension PostgresSchema {
    /// The review console: reviewer accounts, short-lived values (sessions), claims, escalations, audit samples and
    /// appeals (SQLite's v9). The report table's resolution columns are in `items`.
    static let console: [String] = [
        """
        CREATE TABLE reviewer (
            name TEXT PRIMARY KEY,
            role TEXT NOT NULL,
            passwordHash TEXT NOT NULL,
            disabled BOOLEAN NOT NULL DEFAULT false,
            unblurAll BOOLEAN NOT NULL DEFAULT false,
            createdAt TIMESTAMPTZ NOT NULL
        )
        """,
        """
        CREATE TABLE keyValue (
            key TEXT PRIMARY KEY,
            value BYTEA NOT NULL,
            expiresAt TIMESTAMPTZ
        )
        """,
        """
        CREATE TABLE reviewClaim (
            itemId TEXT PRIMARY KEY,
            reviewer TEXT NOT NULL,
            until TIMESTAMPTZ NOT NULL
        )
        """,
        """
        CREATE TABLE escalation (
            itemId TEXT PRIMARY KEY REFERENCES item (id) ON DELETE CASCADE,
            by TEXT NOT NULL,
            note TEXT,
            at TIMESTAMPTZ NOT NULL
        )
        """,
        """
        CREATE TABLE auditSample (
            itemId TEXT PRIMARY KEY REFERENCES item (id) ON DELETE CASCADE,
            sampledAt TIMESTAMPTZ NOT NULL,
            auditedBy TEXT,
            auditedAt TIMESTAMPTZ,
            agreed BOOLEAN
        )
        """,
        """
        CREATE TABLE appeal (
            itemId TEXT PRIMARY KEY REFERENCES item (id) ON DELETE CASCADE,
            userId TEXT NOT NULL,
            message TEXT NOT NULL,
            at TIMESTAMPTZ NOT NULL
        )
        """,
    ]
}
