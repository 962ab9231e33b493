import Foundation
import Persistence
import PersistenceKeychain
import Testing
import TokenKitLogCheck
import TokenKitTestSupport

/// The status table: what each Keychain answer means for a store, tested on every platform.
@Suite(.logLeakCheck()) struct KeychainStatusMappingTests {
    struct ReadRow: Sendable, CustomStringConvertible {
        let status: KeychainStatus
        let expected: Result<Data?, PersistenceError>
        var description: String { "\(status)" }
    }

    static let readTable: [ReadRow] = [
        ReadRow(status: .success, expected: .success(Data("item".utf8))),
        ReadRow(status: .itemNotFound, expected: .success(nil)),
        ReadRow(status: .interactionNotAllowed, expected: .failure(.unavailable)),
        ReadRow(status: .userCanceled, expected: .failure(.unavailable)),
        ReadRow(status: .authFailed, expected: .failure(.unavailable)),
        ReadRow(status: .missingEntitlement, expected: .failure(.missingEntitlement)),
        ReadRow(status: KeychainStatus(rawValue: -50), expected: .failure(.readFailed)),
    ]

    @Test(arguments: readTable) func aReadStatusMeansWhatTheTableSays(_ row: ReadRow) {
        let data = row.status == .success ? Data("item".utf8) : nil
        let outcome = KeychainStatusMapping.read(row.status, data: data, accessGroup: nil)
        switch (outcome, row.expected) {
        case (.success(let got), .success(let expected)): #expect(got == expected)
        case (.failure(let got), .failure(let expected)): #expect(got == expected)
        default: Issue.record("\(row.status): \(outcome), expected \(row.expected)")
        }
    }

    @Test func interactionNotAllowedIsNeverAbsent() {
        let outcome = KeychainStatusMapping.read(.interactionNotAllowed, data: nil, accessGroup: nil)
        #expect((try? outcome.get()) == nil, "a locked device must not read as signed out")
        #expect(throws: PersistenceError.unavailable) { try outcome.get() }
    }

    @Test func missingEntitlementNamesTheAccessGroupAndTheEntitlement() throws {
        let error = KeychainStatusMapping.error(
            .missingEntitlement, accessGroup: "ABCDE12345.com.example.shared", fallback: .writeFailed)
        #expect(error == .missingEntitlement)
        let detail = try #require(error.detail)
        #expect(detail.contains("-34018"))
        #expect(detail.contains("ABCDE12345.com.example.shared"))
        #expect(detail.contains("keychain-access-groups"))
        let noGroup = try #require(
            KeychainStatusMapping.error(.missingEntitlement, accessGroup: nil, fallback: .readFailed).detail)
        #expect(noGroup.contains("application-identifier"))
    }

    @Test func aSuccessfulReadWithoutDataIsCorruptNotAbsent() {
        #expect(throws: PersistenceError.corrupt) {
            try KeychainStatusMapping.read(.success, data: nil, accessGroup: nil).get()
        }
    }

    @Test func statusesDescribeThemselvesByNameAndNumber() {
        #expect("\(KeychainStatus.itemNotFound)" == "errSecItemNotFound (-25300)")
        #expect("\(KeychainStatus.missingEntitlement)" == "errSecMissingEntitlement (-34018)")
        #expect("\(KeychainStatus(rawValue: -9))" == "OSStatus -9")
    }
}

/// What TokenKit asks the Keychain for, call by call.
@Suite(.logLeakCheck()) struct KeychainQueryBuilderTests {
    @Test func theItemQueryIsClassServiceAccountAndGroup() {
        let builder = KeychainQueryBuilder(service: "com.example.tokens", accessGroup: "TEAM.shared")
        #expect(
            builder.itemQuery(account: "default") == [
                .genericPasswordClass, .service("com.example.tokens"), .account("default"),
                .accessGroup("TEAM.shared"), .dataProtectionKeychain,
            ])
    }

    @Test func theAppsDefaultGroupIsUsedWhenNoneIsNamed() {
        let query = KeychainQueryBuilder(service: "s").itemQuery(account: "a")
        #expect(!query.contains { if case .accessGroup = $0 { true } else { false } })
    }

    @Test func aReadAsksForOneItemsData() {
        let query = KeychainQueryBuilder(service: "s").readQuery(account: "a")
        #expect(query.suffix(2) == [.returnData, .matchLimitOne])
    }

    @Test func anAddCarriesTheAccessibilityClassAndTheData() {
        let data = Data("x".utf8)
        let attributes = KeychainQueryBuilder(service: "s", accessibility: .afterFirstUnlock)
            .addAttributes(account: "a", data: data)
        #expect(attributes.contains(.accessible(.afterFirstUnlock)))
        #expect(attributes.contains(.valueData(data)))
    }

    @Test func userPresenceReplacesTheAccessibilityKeyWithAnAccessControl() {
        let builder = KeychainQueryBuilder(
            service: "s", accessibility: .whenUnlockedThisDeviceOnly, requiresUserPresence: true)
        let attributes = builder.addAttributes(account: "a", data: Data())
        #expect(attributes.contains(.userPresence(.whenUnlockedThisDeviceOnly)))
        #expect(!attributes.contains { if case .accessible = $0 { true } else { false } })
        #expect(builder.updateAttributes(data: Data()).contains(.userPresence(.whenUnlockedThisDeviceOnly)))
    }

    @Test func aSynchronizableItemIsQueriedAsSuch() {
        let builder = KeychainQueryBuilder(service: "s", accessibility: .afterFirstUnlock, synchronizable: true)
        #expect(builder.itemQuery(account: "a").contains(.synchronizable(true)))
        #expect(builder.configurationProblem == nil)
    }

    @Test func aSynchronizableThisDeviceOnlyItemIsRefusedBeforeTheCall() {
        #expect(KeychainQueryBuilder(service: "s", synchronizable: true).configurationProblem != nil)
        #expect(
            KeychainQueryBuilder(
                service: "s", accessibility: .afterFirstUnlock, synchronizable: true, requiresUserPresence: true
            ).configurationProblem != nil)
        #expect(KeychainQueryBuilder(service: "").configurationProblem != nil)
    }
}
