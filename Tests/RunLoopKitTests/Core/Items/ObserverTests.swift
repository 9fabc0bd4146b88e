import Glibc
import RunLoopKit
import Synchronization
import TestSupport
import Testing

/// Observers: call order, one-shot observers, and changes made while observers are being called.
@Suite struct ObserverTests {
    @Test func lowerOrdersAreCalledFirstAndEqualOrdersInInsertionOrder() {
        let calls = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            for (name, order) in [("b1", 5), ("c", 10), ("a", -3), ("b2", 5), ("b3", 5)] {
                try! loop.add(LoopObserver(activities: .entry, order: order) { _, _ in calls.append(name) })
            }
            loop.run(in: .default, for: .zero)
        }
        #expect(calls.all == ["a", "b1", "b2", "b3", "c"])
    }

    @Test func aNonRepeatingObserverIsCalledOnceAndInvalidated() {
        let calls = Recorder<String>()
        let state = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let once = LoopObserver(activities: [.beforeTimers, .beforeSources], repeats: false) { _, activity in
                calls.append("\(activity)")
            }
            try! loop.add(once)
            try! loop.add(once, to: "other")
            state.append(once.isValid)
            loop.run(in: .default, for: .zero)
            loop.run(in: .default, for: .zero)
            state.append(once.isValid)
            state.append(loop.contains(once, in: .default))
            state.append(loop.contains(once, in: "other"))
        }
        #expect(calls.all == ["beforeTimers"])
        #expect(state.all == [true, false, false, false])
    }

    @Test func anObserverAddedDuringAPassIsNotCalledInThatPass() {
        let calls = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let adder = LoopObserver(activities: .beforeTimers, repeats: false, order: 0) { _, _ in
                calls.append("adder")
                try! loop.add(
                    LoopObserver(activities: [.beforeTimers, .exit], order: 1) { _, activity in
                        calls.append("added \(activity)")
                    })
            }
            try! loop.add(adder)
            loop.run(in: .default, for: .zero)
            loop.run(in: .default, for: .zero)
        }
        // Not at the beforeTimers it was added during; from the next activity on, yes.
        #expect(calls.all == ["adder", "added exit", "added beforeTimers", "added exit"])
    }

    @Test func anObserverInvalidatedBeforeItsTurnIsSkipped() {
        let calls = Recorder<String>()
        let answers = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let victim = LoopObserver(activities: .entry, order: 1) { _, _ in calls.append("victim") }
            let killer = LoopObserver(activities: .entry, order: 0) { _, _ in
                calls.append("killer")
                victim.invalidate()
            }
            let bystander = LoopObserver(activities: .entry, order: 2) { _, _ in calls.append("bystander") }
            try! loop.add(killer)
            try! loop.add(victim)
            try! loop.add(bystander)
            loop.run(in: .default, for: .zero)
            answers.append(victim.isValid)
            answers.append(loop.contains(victim, in: .default))
        }
        #expect(calls.all == ["killer", "bystander"])
        #expect(answers.all == [false, false])
    }

    @Test func anObserverRemovedBeforeItsTurnIsStillCalledInThatActivity() {
        // As in CF: removing (unlike invalidating) does not reach the snapshot already being called.
        let calls = Recorder<String>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let later = LoopObserver(activities: [.entry, .exit], order: 1) { _, activity in
                calls.append("later \(activity)")
            }
            let remover = LoopObserver(activities: .entry, order: 0) { _, _ in loop.remove(later) }
            try! loop.add(remover)
            try! loop.add(later)
            loop.run(in: .default, for: .zero)
        }
        #expect(calls.all == ["later entry"])
    }

    @Test func anObserverMayRemoveOrInvalidateItself() {
        let calls = Recorder<String>()
        let answers = Recorder<Bool>()
        ItemsSupport.onLoopThread { loop in
            try! loop.add(ItemsSupport.keepAlive())
            let removerBox = Box<LoopObserver>()
            let remover = LoopObserver(activities: .beforeTimers) { _, _ in
                calls.append("remover")
                loop.remove(removerBox.value!)
            }
            removerBox.value = remover
            let invaliderBox = Box<LoopObserver>()
            let invalidator = LoopObserver(activities: .beforeSources) { _, _ in
                calls.append("invalidator")
                invaliderBox.value!.invalidate()
            }
            invaliderBox.value = invalidator
            try! loop.add(remover)
            try! loop.add(invalidator)
            loop.run(in: .default, for: .zero)
            loop.run(in: .default, for: .zero)
            answers.append(remover.isValid)
            answers.append(loop.contains(remover, in: .default))
            answers.append(invalidator.isValid)
        }
        #expect(calls.all == ["remover", "invalidator"])
        #expect(answers.all == [true, false, false])
    }
}
