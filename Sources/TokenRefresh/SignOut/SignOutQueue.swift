import AuthToken
import Foundation
import Logging
import Persistence

/// One client's unfinished sign-outs (see ``PendingSignOuts``): the revocations still to send and the removal still
/// to make, kept in the configured ``SignOutQueueStore`` so that they survive a relaunch.
actor SignOutQueue {
    /// What is kept for the account (format version 1).
    struct Queue: Codable, Equatable {
        var formatVersion = 1
        var revocations: [Revocation] = []
        var removal: Removal?

        var isEmpty: Bool { revocations.isEmpty && removal == nil }
    }

    /// A refresh token to revoke, and how many times it was sent.
    struct Revocation: Codable, Equatable {
        let refreshToken: String
        var sends: Int
    }

    /// The signed-out session to remove from the store: its identity and generation.
    struct Removal: Codable, Equatable {
        let sessionID: String?
        let generation: UInt64

        /// Whether `stored` is the signed-out session (or an older write of it).
        func matches(_ stored: StoredSession) -> Bool {
            stored.sessionID == sessionID && stored.generation <= generation
        }
    }

    private let settings: PendingSignOuts
    private let store: any SignOutQueueStore
    private let account: String
    private let revocation: TokenRevocation?
    private let revocationTimeout: Duration
    private let clock: ClockHandle
    private let logger: Logger
    /// The queue as last read or written; `nil` until read.
    private var queue: Queue?
    /// The send in progress.
    private var sending: Task<Void, Never>?

    /// Keeps the queue in the configured store, else in `sessionStore` when it can keep it, else in memory.
    init(
        configuration: TokenRefreshClient.Configuration, sessionStore: any TokenStore, clock: ClockHandle,
        logger: Logger
    ) {
        self.settings = configuration.pendingSignOuts
        self.store =
            configuration.pendingSignOuts.store ?? (sessionStore as? any SignOutQueueStore)
            ?? InMemorySignOutQueueStore()
        self.account = configuration.account
        self.revocation = configuration.revocation
        self.revocationTimeout = configuration.revocationTimeout
        self.clock = clock
        self.logger = logger
    }

    // MARK: - Reading and writing the queue

    /// The queue, read from the store the first time. A queue that cannot be read now counts as empty and is read
    /// again next time.
    private func current() async -> Queue {
        if let queue { return queue }
        do {
            let data = try await store.loadSignOutQueue(account: account)
            let read = try data.map { try JSONDecoder().decode(Queue.self, from: $0) } ?? Queue()
            queue = read
            return read
        } catch let error as PersistenceError {
            logger.debug("pending sign-outs cannot be read now", metadata: ["error": "\(error)"])
            return Queue()
        } catch {
            logger.warning("pending sign-outs were unreadable and are dropped")
            queue = Queue()
            return Queue()
        }
    }

    /// The queue read from the store again: what other processes sharing it wrote since this one last read it is kept
    /// by the write that follows.
    private func latest() async -> Queue {
        queue = nil
        return await current()
    }

    /// Writes `new` (removing the blob when it is empty).
    private func write(_ new: Queue) async {
        guard new != queue else { return }
        queue = new
        do {
            let data = new.isEmpty ? nil : try JSONEncoder().encode(new)
            try await store.saveSignOutQueue(data, account: account)
        } catch {
            logger.debug("pending sign-outs could not be written", metadata: ["error": "\(type(of: error))"])
        }
    }

    // MARK: - Signing out

    /// A sign-out begins: the ended session's removal, and its refresh token's revocation when a revocation is
    /// configured, are written down before the store's removal is tried.
    func signingOut(refreshToken: String?, sessionID: String?, generation: UInt64?) async {
        var new = await latest()
        if let refreshToken, !refreshToken.isEmpty, revocation != nil,
            !new.revocations.contains(where: { $0.refreshToken == refreshToken })
        {
            new.revocations.append(Revocation(refreshToken: refreshToken, sends: 0))
        }
        if let generation { new.removal = Removal(sessionID: sessionID, generation: generation) }
        await write(new)
    }

    /// The sign-out's removal ended: when it `landed` (or there was nothing to remove), nothing is left to remove;
    /// otherwise it stays written down for the next launch.
    func removalEnded(landed: Bool) async {
        guard landed else { return }
        await removalLanded()
    }

    /// The sign-out's removal landed (or there was nothing to remove).
    func removalLanded() async {
        var new = await latest()
        new.removal = nil
        await write(new)
    }

    // MARK: - Reading the session at launch

    /// Reads the session from `store`, first making a removal a sign-out left unfinished. A signed-out session that
    /// still cannot be removed reads as unavailable, never as the session. Starts sending pending revocations.
    func load(from store: any TokenStore) async -> TokenStoreRead {
        let read = await store.load(account: account)
        let pending = await current()
        if !pending.revocations.isEmpty { startSending() }
        guard let removal = pending.removal else { return read }
        switch read {
        case .found(let stored) where removal.matches(stored):
            do {
                try await store.remove(
                    account: account, condition: .session(stored.sessionID, generation: stored.generation))
                logger.debug("removed a signed-out session left in the store")
            } catch .conflict {
                await removalLanded()  // replaced meanwhile by a newer session: read that one
                return await store.load(account: account)
            } catch {
                return .unavailable(
                    PersistenceError.unavailable.with(detail: "a signed-out session is still stored: \(error)"))
            }
            await removalLanded()
            return .absent
        case .found, .absent:
            await removalLanded()
            return read
        case .unavailable:
            return read
        }
    }

    // MARK: - Sending revocations

    /// Sends the pending revocations in the background, unless a send is running.
    func startSending() {
        guard sending == nil else { return }
        sending = Task { await self.drain() }
    }

    /// Sends the pending revocations (or joins the send running) and waits for it; returns how many are left.
    func send() async -> Int {
        startSending()
        await sending?.value
        return await current().revocations.count
    }

    /// Starts the send and waits for it at most `limit` on the injected clock; the send goes on afterwards.
    func send(waitingAtMost limit: Duration) async {
        guard !(await current()).revocations.isEmpty else { return }
        startSending()
        guard let sending else { return }
        let clock = self.clock
        let once = LockedValue<CheckedContinuation<Void, Never>?>(nil)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            once.withLock { $0 = continuation }
            let timer = Task {
                try? await clock.sleep(for: limit)
                once.withLock { $0.take() }?.resume()
            }
            Task {
                await sending.value
                timer.cancel()
                once.withLock { $0.take() }?.resume()
            }
        }
    }

    /// Sends the pending revocations oldest first; stops at the first failure (the next trigger tries again).
    private func drain() async {
        defer { sending = nil }
        guard let revocation else { return }
        while let first = await current().revocations.first {
            // Counted in the queue as stored now: other processes sharing it may have sent it or added others.
            var new = await latest()
            guard let index = new.revocations.firstIndex(where: { $0.refreshToken == first.refreshToken }) else {
                continue  // sent or dropped by another process since
            }
            new.revocations[index].sends += 1
            let next = new.revocations[index]
            await write(new)
            let token = next.refreshToken
            let outcome = await Result.of {
                try await self.clock.withTimeout(self.revocationTimeout) { try await revocation.revoke(token) }
            }
            new = await latest()
            switch outcome {
            case .success:
                new.revocations.removeAll { $0.refreshToken == token }
                await write(new)
                logger.debug("sent a pending revocation", metadata: ["sends": "\(next.sends)"])
            case .failure(let error):
                let failure = TokenRefreshClient.classify(error)
                if next.sends >= settings.maximumSends {
                    new.revocations.removeAll { $0.refreshToken == token }
                    await write(new)
                    logger.warning(
                        "dropped a revocation the provider did not take",
                        metadata: ["sends": "\(next.sends)", "error": "\(failure.name)"])
                    continue
                }
                logger.debug(
                    "a pending revocation failed; it is kept",
                    metadata: ["sends": "\(next.sends)", "error": "\(failure.name)"])
                return
            }
        }
    }
}
