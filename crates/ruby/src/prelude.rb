# The Ruby side of sluice's embedded Ruby: what the ruby filter's code sees besides
# LogStash::Event and LogStash::Timestamp (defined in Rust).

# Libraries Logstash has loaded before any filter code runs.
require "json"
require "time"
require "date"
require "securerandom"

class LogStash::Timestamp
  include Comparable

  def time
    Time.at(__millis / 1000r).utc
  end

  def year
    time.year
  end

  def +(other)
    LogStash::Timestamp.at(to_f + other)
  end

  def -(other)
    other.is_a?(LogStash::Timestamp) ? to_f - other.to_f : LogStash::Timestamp.at(to_f - other)
  end

  def to_json(*_args)
    "\"#{self}\""
  end

  def inspect
    to_s
  end
end

class LogStash::Event
  def inspect
    "#<LogStash::Event #{to_hash_with_metadata.inspect}>"
  end
end

module Sluice
  # Raised into code still running when a stalled shutdown gives up on it (see `watchdog`).
  class Shutdown < Exception; end # rubocop:disable Lint/InheritException

  @busy = false
  class << self
    attr_accessor :busy
  end

  # What a filter's block returns for an event it did not apply to (no common options).
  UNMATCHED = Object.new.freeze

  # Runs the block on each event of a batch not cancelled, rescuing every exception as
  # Logstash's ruby filter does; returns, per event, nil, false (the block returned
  # UNMATCHED) or the exception. Once sluice has
  # given up waiting for a stop (`__interrupted?`), code is no longer run: the events get
  # the Shutdown exception instead. Shutdown is only raised inside the user's code.
  def self.each_event(events)
    results = Array.new(events.size)
    Thread.handle_interrupt(Shutdown => :never) do
      events.each_with_index do |event, i|
        next if event.cancelled?
        if __interrupted?
          results[i] = Shutdown.new("not run: sluice is stopping and gave up waiting for the ruby filter")
          next
        end
        begin
          Sluice.busy = true
          r = Thread.handle_interrupt(Shutdown => :immediate) { yield event, i }
          results[i] = false if r.equal?(UNMATCHED)
        rescue Exception => e # rubocop:disable Lint/RescueException -- as Logstash's ruby filter
          results[i] = e
        ensure
          Sluice.busy = false
        end
      end
    end
    results
  end

  MAIN = Thread.current
  # Interrupts code that is still running once sluice gives up waiting for a stop. It only
  # runs while the VM thread runs Ruby (Ruby switches threads every 100 ms).
  WATCHDOG = Thread.new do
    loop do
      sleep 0.2
      if __interrupted? && busy
        MAIN.raise(Shutdown, "interrupted: sluice is stopping and the ruby filter's code did not finish")
      end
    end
  end

  # Logstash's plugin logger: message and optional data, into sluice's log.
  class Logger
    LEVELS = %w[trace debug info warn error fatal].freeze

    def initialize(label)
      @label = label
    end

    LEVELS.each_with_index do |level, n|
      define_method(level) do |message = nil, data = nil|
        text = message.to_s
        text = "#{text} #{data.inspect}" if data && !(data.respond_to?(:empty?) && data.empty?)
        Sluice.__log([n, 4].min, @label, text)
        nil
      end
      define_method("#{level}?") { Sluice.__log_enabled([n, 4].min) }
    end
  end

  # One ruby filter: `init` runs in it, `code` becomes its `filter_method`.
  class FilterContext
    def initialize(label)
      @logger = Logger.new(label)
    end

    attr_reader :logger

    # Runs the code on each event not cancelled; new events go to `made` after the index of
    # the event that made them. Returns, per event, nil or the exception raised.
    def __run(events, made)
      Sluice.each_event(events) do |event, i|
        filter_method(event) { |e| made << i << e }
      end
    end
  end
end

module Sluice
  class ScriptError < StandardError; end

  # A script file's own object: what the file defines lives here (`filter`, `register`).
  class ExecutionContext
    def initialize(name, logger)
      @__name__ = name
      @__logger__ = logger
    end

    def logger
      @__logger__
    end

    def register(_params)
      logger.debug("skipping register since the script didn't define it")
    end

    def to_s
      "<ExecutionContext #{@__name__}>"
    end
  end

  def self.check_result_events!(results)
    unless results.is_a?(Array)
      raise "Custom script did not return an array from 'filter'. Only arrays may be returned!"
    end
    results.each do |r|
      unless r.is_a?(::LogStash::Event)
        raise "Custom script returned a non event object '#{r.inspect}'!" \
              " You must an array of events from this function! To drop an event simply return nil."
      end
    end
  end

  # An `expect` block of a script's test.
  class ScriptExpect
    attr_reader :name

    def initialize(test, name, block)
      @test = test
      @name = name
      @block = block
    end

    def execute(events, logger)
      begin
        return :passed if @block.call(events)
        result = :failed
        message = "***TEST FAILURE FOR: '#{@test.name} #{@name}'***"
        details = {}
      rescue => e
        result = :errored
        message = "***TEST RAISED ERROR: '#{@test.name} #{@name}'***"
        details = { "exception" => e.inspect, "backtrace" => e.backtrace }
      end
      details[:parameters] = @test.parameters
      details[:in_events] = @test.in_events.map(&:to_hash_with_metadata)
      details[:results] = events.map(&:to_hash_with_metadata)
      logger.error(message, details)
      result
    end
  end

  # A `test "name" do ... end` block: its own copy of the script, parameters, in_event and
  # expectations.
  class ScriptTest
    attr_reader :name

    def initialize(script, name)
      @script = script
      @name = name
      @expects = []
      @parameters = {}
      @context = script.make_context("Test/#{name}", true)
      script.load_into(@context)
    end

    def parameters(&block)
      return @parameters unless block
      @parameters = block.call
      raise ArgumentError, "Test parameters must be a hash in #{@name}!" unless @parameters.is_a?(Hash)
      @context.register(@parameters)
    end

    def in_event(&block)
      return @in_events unless block
      given = block.call
      hashes = given.is_a?(Hash) ? [given] : given
      hashes.each do |h|
        next if h.is_a?(Hash)
        raise ArgumentError,
              "In event for #{@name} must receive either a hash or an array of hashes! got a '#{h.class}' in #{hashes.inspect}"
      end
      @in_events = Array(hashes).map { |h| ::LogStash::Event.new(h) }
    end
    alias in_events in_event

    def expect(name, &block)
      @expects << ScriptExpect.new(self, name, block)
    end

    def execute(logger)
      raise "You must declare an `in_event` to run tests!" unless @in_events
      results = []
      @in_events.each do |e|
        out = @context.filter(e)
        Sluice.check_result_events!(out)
        results += out
      end
      @expects.map { |x| x.execute(results, logger) }
    end
  end

  # A ruby filter with `path`: the file is loaded, its tests run, then `register(params)`.
  class ScriptFilter
    def initialize(label, path, content, params)
      @label = label
      @path = path
      @content = content
      @logger = Logger.new(label)
      @tests = []
      @main = make_context(:main, false)
      begin
        load_into(@main)
        unless @main.methods.include?(:filter)
          raise "Script does not define a filter! Please ensure that you have defined a filter method!"
        end
      rescue => e
        raise ScriptError, "Error during load of '#{path}': #{e.inspect}"
      end
      run_tests
      begin
        @main.register(params)
      rescue => e
        raise ScriptError, "Error during register of '#{path}': #{e.inspect}"
      end
    end

    def make_context(name, test_mode)
      context = ExecutionContext.new(name, @logger)
      script = self
      if test_mode
        context.define_singleton_method(:test) { |_name, &_block| nil }
      else
        context.define_singleton_method(:test) { |name, &block| script.add_test(name, &block) }
      end
      context
    end

    def load_into(context)
      context.instance_eval(@content, @path, 1)
    end

    def add_test(name, &block)
      test = ScriptTest.new(self, name)
      test.instance_eval(&block)
      @tests << test
    end

    def run_tests
      counts = Hash.new(0)
      @tests.each do |t|
        begin
          t.execute(@logger).each { |r| counts[r] += 1 }
        rescue => e
          @logger.error("***TEST RAISED ERROR: '#{t.name}'***", "exception" => e.inspect)
          counts[:errored] += 1
        end
      end
      @logger.info("Test run complete", :script_path => @path,
                   :results => { :passed => counts[:passed], :failed => counts[:failed], :errored => counts[:errored] })
      bad = counts[:failed] + counts[:errored]
      raise ScriptError, "Script '#{@path}' had #{bad} failing tests! Check the error log for details." if bad > 0
    end

    # As FilterContext#__run, with a script file's rules: `filter` returns the events to keep;
    # the original is cancelled unless it is among them, the others are new events.
    def __run(events, made)
      Sluice.each_event(events) do |event, i|
        out = @main.filter(event)
        Sluice.check_result_events!(out)
        kept = false
        out.each do |r|
          if r.equal?(event)
            kept = true
          else
            made << i << r
          end
        end
        event.cancel unless kept
      end
    end
  end
end

# What would take the process away from sluice is refused: forking copies only the VM thread,
# exit! ends sluice without its shutdown, exec replaces it, a signal sent to sluice itself (or
# its process group) would kill or stop it behind its back, and a trap would replace sluice's
# signal handling.
module Kernel
  private

  def fork(*)
    raise NotImplementedError, "fork is not available in sluice's ruby filter"
  end

  def exit!(*)
    raise NotImplementedError, "exit! is not available in sluice's ruby filter"
  end

  def exec(*)
    raise NotImplementedError, "exec is not available in sluice's ruby filter"
  end

  def trap(*)
    raise NotImplementedError, "signal traps are not available in sluice's ruby filter (sluice handles signals)"
  end
end

module Process
  def self.fork(*)
    raise NotImplementedError, "fork is not available in sluice's ruby filter"
  end

  def self.exit!(*)
    raise NotImplementedError, "Process.exit! is not available in sluice's ruby filter"
  end

  def self.exec(*)
    raise NotImplementedError, "Process.exec is not available in sluice's ruby filter"
  end

  class << self
    alias_method :__sluice_kill, :kill

    # Other processes may be signalled; sluice itself, its process group (0, -pgid) and every
    # process (-1) may not, except with signal 0 (a check that sends nothing).
    def kill(signal, *pids)
      unless [0, "0", "EXIT", :EXIT].include?(signal)
        own = [::Process.pid, 0, -1, -::Process.getpgrp]
        if pids.any? { |p| own.include?(Integer(p)) }
          raise NotImplementedError, "signalling sluice itself or its process group is not available in sluice's ruby filter"
        end
      end
      __sluice_kill(signal, *pids)
    end
  end

  def self.daemon(*)
    raise NotImplementedError, "Process.daemon is not available in sluice's ruby filter"
  end
end

module Signal
  def self.trap(*)
    raise NotImplementedError, "signal traps are not available in sluice's ruby filter (sluice handles signals)"
  end
end
