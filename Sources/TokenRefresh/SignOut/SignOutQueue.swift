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

    /// A refresh token to revoke, how many times it was sent, and who is sending it now.
    struct Revocation: Codable, Equatable {
        let refreshToken: String
        var sends: Int
        /// The send in progress, if any: other senders sharing the queue leave the revocation alone until it ends or
        /// its claim expires (its sender may have died mid-send). Absent in queues written before claims existed.
        var claim: Claim?

        /// Whether a sender may claim it at `now`: nobody is sending it, or the send's claim has expired, or the
        /// process that claimed it has ended (a process of this machine).
        func isFree(at now: Date) -> Bool {
            guard let claim else { return true }
            return claim.until <= now || SenderProcess.hasEnded(claim.process, on: claim.host)
        }
    }

    /// One send of a revocation by one sender: its ID, the wall time until which nobody else sends it, and the process
    /// and machine sending it.
    struct Claim: Codable, Equatable {
        let id: String
        let until: Date
        let process: Int32
        let host: String
    }

    /// The signed-out session to remove from the store: its identity and the generation it ended at.
    struct Removal: Codable, Equatable {
        let sessionID: String?
        let generation: UInt64

        /// Whether `stored` is the signed-out session, at any generation: an older write of it, or a later one another
        /// process sharing the store refreshed it to after this sign-out. A session signed in since has another
        /// identity.
        func matches(_ stored: StoredSession) -> Bool {
            stored.sessionID == sessionID
        }
    }

    private let settings: PendingSignOuts
    private let store: any SignOutQueueStore
    private let account: String
    private let revocation: TokenRevocation?
    private let revocationTimeout: Duration
    private let clock: ClockHandle
    /// The wall clock claims are stamped with (shared by every sender of the queue, give or take their clocks' skew).
    private let now: @Sendable () -> Date
    private let logger: Logger
    /// The queue as last read or written; `nil` until read.
    private var queue: Queue?
    /// The send in progress.
    private var sending: Task<Void, Never>?

    /// Keeps the queue in the configured store, else in `sessionStore` when it can keep it, else in memory.
    init(
        configuration: TokenRefreshClient.Configuration, sessionStore: any TokenStore, clock: ClockHandle,
        now: @escaping @Sendable () -> Date, logger: Logger
    ) {
        self.settings = configuration.pendingSignOuts
        self.store =
            configuration.pendingSignOuts.store ?? (sessionStore as? any SignOutQueueStore)
            ?? InMemorySignOutQueueStore()
        self.account = configuration.account
        self.revocation = configuration.revocation
        self.revocationTimeout = configuration.revocationTimeout
        self.clock = clock
        self.now = now
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

    /// Changes the queue with `change`, as stored now and in one step (``SignOutQueueStore/updateSignOutQueue(account:_:)``):
    /// what other processes sharing it wrote meanwhile is kept, and none of them writes between the read and the
    /// write. Returns the queue afterwards, or `nil` when it could not be changed (left as it was; tried again at the
    /// next change).
    @discardableResult
    private func update(_ change: @escaping @Sendable (inout Queue) -> Void) async -> Queue? {
        let logger = self.logger
        do {
            let data = try await store.updateSignOutQueue(account: account) { data in
                var queue = Queue()
                do {
                    queue = try data.map { try JSONDecoder().decode(Queue.self, from: $0) } ?? Queue()
                } catch {
                    logger.warning("pending sign-outs were unreadable and are dropped")
                }
                change(&queue)
                // An encoding that fails (it does not for this type) keeps the queue as it was.
                return queue.isEmpty ? nil : (try? JSONEncoder().encode(queue)) ?? data
            }
            let new = try data.map { try JSONDecoder().decode(Queue.self, from: $0) } ?? Queue()
            queue = new
            return new
        } catch {
            logger.debug("pending sign-outs could not be written", metadata: ["error": "\(type(of: error))"])
            return nil
        }
    }

    // MARK: - Signing out

    /// A sign-out begins: the ended session's removal, and its refresh token's revocation when a revocation is
    /// configured, are written down before the store's removal is tried.
    func signingOut(refreshToken: String?, sessionID: String?, generation: UInt64?) async {
        let revoked = revocation == nil ? nil : refreshToken.flatMap { $0.isEmpty ? nil : $0 }
        await update { queue in
            if let revoked, !queue.revocations.contains(where: { $0.refreshToken == revoked }) {
                queue.revocations.append(Revocation(refreshToken: revoked, sends: 0))
            }
            if let generation { queue.removal = Removal(sessionID: sessionID, generation: generation) }
        }
    }

    /// The sign-out's removal ended: when it `landed` (or there was nothing to remove), nothing is left to remove;
    /// otherwise it stays written down for the next launch.
    func removalEnded(landed: Bool) async {
        guard landed else { return }
        await removalLanded()
    }

    /// The sign-out's removal landed (or there was nothing to remove).
    func removalLanded() async {
        await update { $0.removal = nil }
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

    /// Sends the pending revocations and waits for the send; returns how many are left, as stored now, leaving out
    /// those another process sharing the queue is sending at this moment (they are its own). A send already running
    /// (the launch's, started offline) is waited for first, and a new one sends what it left: the caller asks now
    /// because something changed since that send started.
    func send() async -> Int {
        if let running = sending { await running.value }
        startSending()
        await sending?.value
        queue = nil
        let now = now()
        return await current().revocations.count { $0.isFree(at: now) }
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

    /// Sends the pending revocations oldest first; stops at the first failure (the next trigger tries again). Each send
    /// is claimed in the queue first, in the same step that counts it, so a revocation another process sharing the
    /// queue is sending is left to it (until its claim expires: that process may have died mid-send).
    private func drain() async {
        defer { sending = nil }
        guard let revocation else { return }
        while let next = await claimNext() {
            let token = next.refreshToken
            let outcome = await Result.of {
                try await self.clock.withTimeout(self.revocationTimeout) { try await revocation.revoke(token) }
            }
            switch outcome {
            case .success:
                await update { $0.revocations.removeAll { $0.refreshToken == token } }
                logger.debug("sent a pending revocation", metadata: ["sends": "\(next.sends)"])
            case .failure(let error):
                let failure = TokenRefreshClient.classify(error)
                let dropped = next.sends >= settings.maximumSends
                let claim = next.claim
                await update { queue in
                    if dropped {
                        queue.revocations.removeAll { $0.refreshToken == token }
                    } else if let index = queue.revocations.firstIndex(where: { $0.claim == claim }) {
                        queue.revocations[index].claim = nil
                    }
                }
                if dropped {
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

    /// Claims the oldest revocation nobody else is sending, and counts its send, in one change of the queue: the
    /// revocation as claimed, or `nil` when none is free (or the queue cannot be changed now). The claim lasts the
    /// send's timeout and a margin, or until its process is seen ended by a process of the same machine.
    private func claimNext() async -> Revocation? {
        let now = now()
        let (seconds, attoseconds) = revocationTimeout.components
        let timeout = TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
        let claim = Claim(
            id: UUID().uuidString, until: now + timeout + Self.claimMargin, process: SenderProcess.id,
            host: SenderProcess.host)
        let claimed = await update { queue in
            guard let index = queue.revocations.firstIndex(where: { $0.isFree(at: now) }) else { return }
            queue.revocations[index].sends += 1
            queue.revocations[index].claim = claim
        }
        return claimed?.revocations.first { $0.claim == claim }
    }

    /// How much longer than the send's timeout a claim lasts.
    static let claimMargin: TimeInterval = 10
}
