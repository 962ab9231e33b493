#!/bin/sh
# Typechecks PersistenceKeychain's Apple-only file (SystemKeychain.swift, the SecItem calls) on Linux against
# Security.swift, a stand-in declaring the symbols it uses. It checks names, arities and the Swift around them;
# CF types are approximated, so a device build is still the final word. Run after `swift build`.
set -eu
cd "$(dirname "$0")/../.."
stub=$(mktemp -d)
swiftc -emit-module -module-name Security -parse-as-library Tests/AppleStubs/Security.swift -o "$stub/Security.swiftmodule"
modules=.build/debug/Modules
package=$(grep -o '"-package-name","[^"]*' .build/debug.yaml | head -1 | cut -d'"' -f4)
swiftc -typecheck -module-name PersistenceKeychain -package-name "$package" -swift-version 6 \
    -enable-upcoming-feature InternalImportsByDefault -enable-upcoming-feature ExistentialAny \
    -enable-upcoming-feature MemberImportVisibility -I "$stub" -I "$modules" Sources/PersistenceKeychain/*.swift
rm -rf "$stub"
echo "PersistenceKeychain typechecks with Security present"
