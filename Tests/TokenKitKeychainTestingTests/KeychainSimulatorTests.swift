import Foundation
import PersistenceKeychain
import Testing
import TokenKitKeychainTesting
import TokenKitLogCheck

/// The simulator's own semantics, call by call, as the stores' tests rely on them: the primary key, entitlements,
/// protected data before the first unlock and while locked, user presence, and one Keychain shared through a file.
@Suite(.logLeakCheck()) struct KeychainSimulatorTests {
    static let group = "TEAMID.app"

    static func item(
        account: String = "alice", data: String = "pair", accessible: KeychainTokenStore.Accessibility = .whenUnlocked,
        group: String? = nil
    ) -> [KeychainAttribute] {
        var attributes: [KeychainAttribute] = [
            .genericPasswordClass, .service("com.example.tokens"), .account(account), .accessible(accessible),
            .valueData(Data(data.utf8)),
        ]
        if let group { attributes.append(.accessGroup(group)) }
        return attributes
    }

    static func query(account: String = "alice") -> [KeychainAttribute] {
        [.genericPasswordClass, .service("com.example.tokens"), .account(account), .returnData, .matchLimitOne]
    }

    @Test func anItemIsFoundByItsPrimaryKeyAndAddedOnce() {
        let keychain = KeychainSimulator()
        #expect(keychain.add(Self.item()) == .success)
        #expect(keychain.add(Self.item(data: "other")) == .duplicateItem)
        let read = keychain.copyMatching(Self.query())
        #expect(read.status == .success)
        #expect(read.data == Data("pair".utf8))
        #expect(keychain.copyMatching(Self.query(account: "bob")).status == .itemNotFound)
        #expect(keychain.update(Self.query(), with: [.valueData(Data("new".utf8))]) == .success)
        #expect(keychain.copyMatching(Self.query()).data == Data("new".utf8))
        #expect(keychain.delete(Self.query()) == .success)
        #expect(keychain.delete(Self.query()) == .itemNotFound)
    }

    @Test func anAccessGroupOutsideTheEntitlementsIsAMissingEntitlement() {
        let keychain = KeychainSimulator(configuration: .init(accessGroups: [Self.group]))
        #expect(keychain.add(Self.item(group: "OTHER.shared")) == .missingEntitlement)
        #expect(keychain.add(Self.item(group: Self.group)) == .success)
    }

    /// Before the first unlock nothing protected can be read: the answer is "interaction not allowed", or "not
    /// found" when so configured (as prewarmed launches have seen); never the item, and the item is still there
    /// after the unlock.
    @Test(arguments: [false, true])
    func beforeTheFirstUnlockNothingIsReadableAndNothingIsLost(answersNotFound: Bool) {
        let keychain = KeychainSimulator(configuration: .init(readsBeforeFirstUnlockAnswerNotFound: answersNotFound))
        #expect(keychain.add(Self.item(accessible: .afterFirstUnlock)) == .success)
        keychain.reboot()
        #expect(!keychain.isProtectedDataAvailable)
        let read = keychain.copyMatching(Self.query())
        #expect(read.status == (answersNotFound ? .itemNotFound : .interactionNotAllowed))
        #expect(read.data == nil)
        keychain.unlock()
        #expect(keychain.isProtectedDataAvailable)
        #expect(keychain.copyMatching(Self.query()).data == Data("pair".utf8))
    }

    /// A locked device keeps "after first unlock" items readable and "when unlocked" items out of reach.
    @Test func aLockedDeviceHidesOnlyWhenUnlockedItems() {
        let keychain = KeychainSimulator()
        #expect(keychain.add(Self.item(account: "background", accessible: .afterFirstUnlock)) == .success)
        #expect(keychain.add(Self.item(account: "foreground", accessible: .whenUnlocked)) == .success)
        keychain.lock()
        #expect(keychain.copyMatching(Self.query(account: "background")).status == .success)
        #expect(keychain.copyMatching(Self.query(account: "foreground")).status == .interactionNotAllowed)
        keychain.unlock()
        #expect(keychain.copyMatching(Self.query(account: "foreground")).status == .success)
    }

    @Test func anItemAskingForPresenceIsRefusedWhenTheUserCancels() {
        let keychain = KeychainSimulator(configuration: .init(userPresence: false))
        var attributes = Self.item()
        attributes.append(.userPresence(.whenUnlockedThisDeviceOnly))
        #expect(keychain.add(attributes) == .success)
        #expect(keychain.copyMatching(Self.query()).status == .userCanceled)
    }

    /// Two simulators over one file are one Keychain, as an app and its extension share one: an item one adds, the
    /// other reads, and a lock on one is the device's.
    @Test func twoSimulatorsOverOneFileShareItemsAndTheDevice() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent(UUID().uuidString)
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("keychain.json")
        let app = KeychainSimulator(file: file)
        let widget = KeychainSimulator(file: file)
        #expect(app.add(Self.item()) == .success)
        #expect(widget.copyMatching(Self.query()).data == Data("pair".utf8))
        app.lock()
        #expect(widget.copyMatching(Self.query()).status == .interactionNotAllowed)
    }
}
