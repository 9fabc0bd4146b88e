// What the upstream test files take for granted (their own test target imports it once for every file).
@_exported import Dispatch
@_exported import Foundation
