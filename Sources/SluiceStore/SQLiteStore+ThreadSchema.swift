import GRDB

extension SQLiteStore {
    /// The thread tables and the triggers that keep them true whichever path changes an item (intake, reprocess,
    /// a person's decision, erasure):
    /// - `threadMessage`: one row per approved text item with a conversation — the only messages a thread (and so
    ///   a provider) ever sees. `seq` is the message's number (seed 004's `messageId: number`).
    /// - `messageSearch`: FTS5 over those messages' text, rowid = `seq`.
    /// - `messageEmbedding`: a vector per message and model, dropped when the message leaves the thread or its
    ///   text changes.
    /// - `threadMember`: who may read a conversation (senders, recipients, `members` lists of judged lines; it only
    ///   grows, except that erasing a user removes theirs and keeps other lines from adding them back).
    /// - `threadInsight`: cached LLM answers, dropped whenever the thread changes.
    static func createThreadTables(_ db: Database) throws {
        try db.alter(table: "item") { t in
            t.add(column: "sentAt", .datetime)
            t.add(column: "members", .text)
        }
        try db.execute(sql: """
            CREATE TABLE threadMessage (
                seq INTEGER PRIMARY KEY AUTOINCREMENT,
                itemId TEXT NOT NULL UNIQUE,
                conversationId TEXT NOT NULL,
                orderAt DATETIME NOT NULL
            );
            CREATE INDEX threadMessageOrder ON threadMessage(conversationId, orderAt, seq);
            CREATE VIRTUAL TABLE messageSearch USING fts5(text, tokenize = 'porter unicode61 remove_diacritics 2');
            CREATE TABLE messageEmbedding (
                seq INTEGER NOT NULL,
                model TEXT NOT NULL,
                vector BLOB NOT NULL,
                at DATETIME NOT NULL,
                PRIMARY KEY (seq, model)
            );
            CREATE TABLE threadMember (
                conversationId TEXT NOT NULL,
                userId TEXT NOT NULL,
                PRIMARY KEY (conversationId, userId)
            );
            CREATE INDEX threadMemberUser ON threadMember(userId);
            CREATE TABLE threadInsight (
                key TEXT PRIMARY KEY,
                conversationId TEXT NOT NULL,
                body TEXT NOT NULL,
                createdAt DATETIME NOT NULL
            );
            CREATE INDEX threadInsightConversation ON threadInsight(conversationId);

            -- Members come from lines that were judged (not rejected): their sender, recipient and `members` list.
            -- A user erased with erase-user is not made a member again by other people's lines (threadMemberErased)
            -- until they send a line themselves.
            CREATE TABLE threadMemberErased (userId TEXT PRIMARY KEY);
            CREATE TRIGGER threadMembersOnInsert AFTER INSERT ON item
            WHEN new.conversationId IS NOT NULL AND new.kind = 'text' AND new.status != 'rejected' BEGIN
                DELETE FROM threadMemberErased WHERE userId = new.userId;
                INSERT OR IGNORE INTO threadMember (conversationId, userId) VALUES (new.conversationId, new.userId);
                INSERT OR IGNORE INTO threadMember (conversationId, userId)
                    SELECT new.conversationId, new.recipientId WHERE new.recipientId IS NOT NULL
                        AND new.recipientId NOT IN (SELECT userId FROM threadMemberErased);
                INSERT OR IGNORE INTO threadMember (conversationId, userId)
                    SELECT new.conversationId, value FROM json_each(COALESCE(new.members, '[]'))
                    WHERE type = 'text' AND value NOT IN (SELECT userId FROM threadMemberErased);
            END;
            CREATE TRIGGER threadMembersOnUpdate AFTER UPDATE OF status, conversationId, recipientId, members ON item
            WHEN new.conversationId IS NOT NULL AND new.kind = 'text' AND new.status != 'rejected'
                AND (new.conversationId IS NOT old.conversationId OR new.recipientId IS NOT old.recipientId
                     OR new.members IS NOT old.members OR old.status = 'rejected') BEGIN
                INSERT OR IGNORE INTO threadMember (conversationId, userId)
                    SELECT new.conversationId, new.userId WHERE new.userId NOT IN (SELECT userId FROM threadMemberErased);
                INSERT OR IGNORE INTO threadMember (conversationId, userId)
                    SELECT new.conversationId, new.recipientId WHERE new.recipientId IS NOT NULL
                        AND new.recipientId NOT IN (SELECT userId FROM threadMemberErased);
                INSERT OR IGNORE INTO threadMember (conversationId, userId)
                    SELECT new.conversationId, value FROM json_each(COALESCE(new.members, '[]'))
                    WHERE type = 'text' AND value NOT IN (SELECT userId FROM threadMemberErased);
            END;

            CREATE TRIGGER threadMessageOnInsert AFTER INSERT ON item
            WHEN new.kind = 'text' AND new.status = 'approved' AND new.conversationId IS NOT NULL AND new.text IS NOT NULL BEGIN
                INSERT INTO threadMessage (itemId, conversationId, orderAt)
                    VALUES (new.id, new.conversationId, COALESCE(new.sentAt, new.createdAt));
                INSERT INTO messageSearch (rowid, text) VALUES (last_insert_rowid(), new.text);
                DELETE FROM threadInsight WHERE conversationId = new.conversationId;
            END;
            -- One trigger for every update, its statements in order: a message that leaves the thread (another
            -- status, new text, another conversation or time, erased) loses its search row and vectors; a message
            -- that is (now) approved joins; the thread's cached answers go whenever it changed.
            CREATE TRIGGER threadMessageOnUpdate AFTER UPDATE OF status, text, conversationId, sentAt ON item
            WHEN old.kind = 'text' AND (old.conversationId IS NOT NULL OR new.conversationId IS NOT NULL) BEGIN
                DELETE FROM messageSearch WHERE rowid = (SELECT seq FROM threadMessage WHERE itemId = old.id)
                    AND (new.status != 'approved' OR new.text IS NOT old.text OR new.conversationId IS NOT old.conversationId
                         OR new.sentAt IS NOT old.sentAt);
                DELETE FROM messageEmbedding WHERE seq = (SELECT seq FROM threadMessage WHERE itemId = old.id)
                    AND (new.status != 'approved' OR new.text IS NOT old.text OR new.conversationId IS NOT old.conversationId
                         OR new.sentAt IS NOT old.sentAt);
                DELETE FROM threadMessage WHERE itemId = old.id
                    AND (new.status != 'approved' OR new.text IS NOT old.text OR new.conversationId IS NOT old.conversationId
                         OR new.sentAt IS NOT old.sentAt);
                INSERT INTO threadMessage (itemId, conversationId, orderAt)
                    SELECT new.id, new.conversationId, COALESCE(new.sentAt, new.createdAt)
                    WHERE new.status = 'approved' AND new.conversationId IS NOT NULL AND new.text IS NOT NULL
                        AND NOT EXISTS (SELECT 1 FROM threadMessage WHERE itemId = new.id);
                INSERT INTO messageSearch (rowid, text)
                    SELECT seq, new.text FROM threadMessage WHERE itemId = new.id
                        AND NOT EXISTS (SELECT 1 FROM messageSearch WHERE rowid = threadMessage.seq);
                DELETE FROM threadInsight WHERE conversationId IN (old.conversationId, new.conversationId)
                    AND (old.status = 'approved' OR new.status = 'approved')
                    AND (old.status IS NOT new.status OR new.text IS NOT old.text OR new.conversationId IS NOT old.conversationId
                         OR new.sentAt IS NOT old.sentAt);
            END;
            CREATE TRIGGER threadMessageOnDelete AFTER DELETE ON item WHEN old.conversationId IS NOT NULL BEGIN
                DELETE FROM messageSearch WHERE rowid = (SELECT seq FROM threadMessage WHERE itemId = old.id);
                DELETE FROM messageEmbedding WHERE seq = (SELECT seq FROM threadMessage WHERE itemId = old.id);
                DELETE FROM threadMessage WHERE itemId = old.id;
                DELETE FROM threadInsight WHERE conversationId = old.conversationId;
            END;

            INSERT OR IGNORE INTO threadMember (conversationId, userId)
                SELECT conversationId, userId FROM item WHERE kind = 'text' AND conversationId IS NOT NULL AND status != 'rejected';
            INSERT OR IGNORE INTO threadMember (conversationId, userId)
                SELECT conversationId, recipientId FROM item
                WHERE kind = 'text' AND conversationId IS NOT NULL AND recipientId IS NOT NULL AND status != 'rejected';
            INSERT INTO threadMessage (itemId, conversationId, orderAt)
                SELECT id, conversationId, createdAt FROM item
                WHERE kind = 'text' AND status = 'approved' AND conversationId IS NOT NULL AND text IS NOT NULL ORDER BY createdAt, rowid;
            INSERT INTO messageSearch (rowid, text) SELECT t.seq, i.text FROM threadMessage t JOIN item i ON i.id = t.itemId;
            """)
    }
}
