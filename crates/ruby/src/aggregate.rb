# The aggregate filter, on sluice's embedded Ruby: maps per task id that the filter's code
# fills across events, shared by the aggregate filters of one pipeline, pushed as events
# when they time out. Written after logstash-filter-aggregate's documented behaviour; the
# class keeps Logstash's name so that `aggregate_maps_path` files written by either load in
# the other (Marshal stores class names).

module LogStash
  module Filters
    class Aggregate
      DEFAULT_TIMEOUT = 1800
      WARNING_FREQUENCY_DIVISOR = 5
      TIMEOUT_OPTIONS = %w[timeout inactivity_timeout timeout_code push_map_as_event_on_timeout
                           push_previous_map_as_event timeout_timestamp_field timeout_task_id_field
                           timeout_tags].freeze

      # One task's map and its times.
      class Element
        attr_accessor :creation_timestamp, :lastevent_timestamp, :difference_from_creation_to_now,
                      :difference_from_lastevent_to_now, :timeout, :inactivity_timeout, :task_id, :map

        def initialize(creation_timestamp, task_id)
          @creation_timestamp = creation_timestamp
          @lastevent_timestamp = creation_timestamp
          @difference_from_creation_to_now = (Time.now - creation_timestamp).to_i
          @difference_from_lastevent_to_now = @difference_from_creation_to_now
          @timeout = nil
          @inactivity_timeout = nil
          @task_id = task_id
          @map = {}
        end
      end

      # What the aggregate filters of one compiled pipeline share.
      class Shared
        attr_reader :maps, :timeout_owner, :last_flush, :members
        attr_accessor :maps_path_owner

        def initialize
          @maps = {}          # task_id pattern => { task id => Element }
          @timeout_owner = {} # task_id pattern => the filter that handles its timeouts
          @last_flush = {}
          @members = []
          @maps_path_owner = nil
        end
      end

      SHARED = {} # compile scope => Shared

      attr_reader :timeout, :inactivity_timeout, :push_map_as_event_on_timeout, :aggregate_maps_path
      attr_accessor :check_expired_maps_on_every_flush

      def initialize(label, scope, options)
        @logger = Sluice::Logger.new(label)
        @scope = scope
        o = options
        @task_id = o["task_id"]
        @code = o["code"]
        @map_action = o["map_action"] || "create_or_update"
        @end_of_task = o["end_of_task"] || false
        @aggregate_maps_path = o["aggregate_maps_path"]
        @timeout = o["timeout"]
        @inactivity_timeout = o["inactivity_timeout"]
        @timeout_code = o["timeout_code"]
        @push_map_as_event_on_timeout = o["push_map_as_event_on_timeout"] || false
        @push_previous_map_as_event = o["push_previous_map_as_event"] || false
        @timeout_timestamp_field = o["timeout_timestamp_field"]
        @timeout_task_id_field = o["timeout_task_id_field"]
        @timeout_tags = o["timeout_tags"] || []
        @map_count_warning_threshold = o["map_count_warning_threshold"] || 5000
        @has_timeout_options = TIMEOUT_OPTIONS.any? { |k| o.key?(k) && o[k] != false && o[k] != [] }
        @codeblock = instance_eval("lambda { |event, map, map_meta, &new_event_block| #{@code}\n}",
                                   "(aggregate filter code)", 0)
        if @timeout_code
          @timeout_codeblock = instance_eval("lambda { |event| #{@timeout_code}\n}",
                                             "(aggregate filter timeout code)", 0)
        end
        @shared = (SHARED[scope] ||= Shared.new)
        @shared.members << self
        begin
          register
        rescue StandardError
          __close
          raise
        end
      end

      def register
        unless @task_id.match(/%\{.+\}/)
          raise ArgumentError, "Aggregate plugin: task_id pattern '#{@task_id}' must contain a dynamic expression like '%{field}'"
        end
        if @has_timeout_options
          if @shared.timeout_owner.key?(@task_id)
            raise ArgumentError, "Aggregate plugin: For task_id pattern '#{@task_id}', there are more than one filter which defines timeout options. All timeout options have to be defined in only one aggregate filter per task_id pattern. Timeout options are : #{TIMEOUT_OPTIONS.join(', ')}"
          end
          @shared.timeout_owner[@task_id] = self
        end
        if @inactivity_timeout && ((@timeout && @inactivity_timeout > @timeout) ||
                                   (@timeout.nil? && @inactivity_timeout > DEFAULT_TIMEOUT))
          raise ArgumentError, "Aggregate plugin: For task_id pattern #{@task_id}, inactivity_timeout (#{@inactivity_timeout}) must be lower than timeout (#{@timeout})"
        end
        if @aggregate_maps_path
          if @shared.maps_path_owner
            raise ArgumentError, "Aggregate plugin: Option 'aggregate_maps_path' must be set on only one aggregate filter"
          end
          @shared.maps_path_owner = self
          if File.exist?(@aggregate_maps_path)
            File.open(@aggregate_maps_path, "rb") { |f| @shared.maps.merge!(Marshal.load(f)) }
            File.delete(@aggregate_maps_path)
            @logger.info("Aggregate maps loaded from : #{@aggregate_maps_path}")
          end
        end
        @shared.maps[@task_id] ||= {}
        @map_count_warning_frequency = [@map_count_warning_threshold / WARNING_FREQUENCY_DIVISOR, 1].max
      end

      # Called when the pipeline's filters are freed: the last one of the pipeline stores the
      # maps left (aggregate_maps_path) and forgets the pipeline's shared state.
      def __close
        return if @closed
        @closed = true
        @shared.members.delete(self)
        return unless @shared.members.empty?
        maps = @shared.maps
        maps.delete_if { |_, v| v.empty? }
        owner = @shared.maps_path_owner
        if owner && !maps.empty?
          File.open(owner.aggregate_maps_path, "wb") { |f| Marshal.dump(maps, f) }
          @logger.info("Aggregate maps stored to : #{owner.aggregate_maps_path}")
        end
        SHARED.delete(@scope)
      end

      def __run(events, made)
        Sluice.each_event(events) do |event, i|
          filter_one(event, i, made) ? nil : Sluice::UNMATCHED
        end
      end

      # Events released by timeouts (every flush), and at the final flush the last map of
      # push_previous_map_as_event, tagged _aggregatefinalflush.
      def __flush(final)
        init_timeout_management
        return [] unless @shared.timeout_owner[@task_id].equal?(self) && @shared.maps[@task_id]
        last = @shared.last_flush[@task_id]
        unless last.nil? || Time.now > last + @inactivity_timeout / 2 || final || @check_expired_maps_on_every_flush
          return []
        end
        out = remove_expired_maps
        if final && @push_previous_map_as_event && !@shared.maps[@task_id].empty?
          out << extract_previous_map_as_event
        end
        out.each { |e| e.tag("_aggregatefinalflush") } if final
        @shared.last_flush[@task_id] = Time.now
        out
      end

      private

      def filter_one(event, index, made)
        task_id = event.sprintf(@task_id)
        return false if task_id.nil? || task_id == @task_id
        check_map_count_warning
        to_yield = nil
        to_yield = remove_expired_map_based_on_event_timestamp(task_id, event) if @timeout_timestamp_field
        maps = @shared.maps[@task_id]
        element = maps[task_id]
        if element.nil?
          return false if @map_action == "update"
          to_yield = extract_previous_map_as_event if @push_previous_map_as_event && !maps.empty?
          element = Element.new(reference_timestamp(event), task_id)
          maps[task_id] = element
        elsif @map_action == "create"
          return false
        end
        element.lastevent_timestamp = reference_timestamp(event)
        element.difference_from_lastevent_to_now = (Time.now - element.lastevent_timestamp).to_i
        ok = false
        begin
          @codeblock.call(event, element.map, element) { |e| made << index << e }
          ok = true
        rescue StandardError => e
          @logger.error("Aggregate exception occurred", :error => e, :code => @code, :map => element.map,
                                                         :event_data => event.to_hash_with_metadata)
          event.tag("_aggregateexception")
        end
        maps.delete(task_id) if @end_of_task
        to_yield = process_map_timeout(element) if element.timeout || element.inactivity_timeout
        made << index << to_yield if to_yield
        ok
      end

      def init_timeout_management
        @shared.timeout_owner[@task_id] = self unless @shared.timeout_owner.key?(@task_id)
        return unless @shared.timeout_owner[@task_id].equal?(self)
        @timeout ||= DEFAULT_TIMEOUT
        @inactivity_timeout ||= @timeout
      end

      def process_map_timeout(element)
        init_timeout_management
        owner = @shared.timeout_owner[@task_id]
        if element.timeout == 0 || element.inactivity_timeout == 0
          @shared.maps[@task_id].delete(element.task_id)
          return create_timeout_event(element.map, element.task_id) if owner.push_map_as_event_on_timeout
        else
          owner.check_expired_maps_on_every_flush ||= true
        end
        nil
      end

      def create_timeout_event(map, task_id)
        event = LogStash::Event.new(map)
        event.set(@timeout_task_id_field, task_id) if @timeout_task_id_field
        @timeout_tags.each { |t| event.tag(event.sprintf(t)) }
        if @timeout_codeblock
          begin
            @timeout_codeblock.call(event)
          rescue StandardError => e
            @logger.error("Aggregate exception occurred", :error => e, :timeout_code => @timeout_code,
                                                           :timeout_event_data => event.to_hash_with_metadata)
            event.tag("_aggregateexception")
          end
        end
        event
      end

      def extract_previous_map_as_event
        task_id, element = @shared.maps[@task_id].shift
        create_timeout_event(element.map, task_id)
      end

      def remove_expired_maps
        out = []
        now = Time.now
        default_min = now - @timeout
        default_min_inactivity = now - @inactivity_timeout
        @shared.maps[@task_id].delete_if do |key, element|
          min = element.timeout ? now - element.timeout : default_min
          min_inactivity = element.inactivity_timeout ? now - element.inactivity_timeout : default_min_inactivity
          if element.creation_timestamp + element.difference_from_creation_to_now < min ||
             element.lastevent_timestamp + element.difference_from_lastevent_to_now < min_inactivity
            out << create_timeout_event(element.map, key) if @push_previous_map_as_event || @push_map_as_event_on_timeout
            next true
          end
          false
        end
        @check_expired_maps_on_every_flush = nil if @shared.maps[@task_id].empty? && @check_expired_maps_on_every_flush
        out
      end

      def remove_expired_map_based_on_event_timestamp(task_id, event)
        element = @shared.maps[@task_id][task_id]
        return nil if element.nil?
        init_timeout_management
        at = reference_timestamp(event)
        min = at - (element.timeout || @timeout)
        min_inactivity = at - (element.inactivity_timeout || @inactivity_timeout)
        return nil unless element.creation_timestamp < min || element.lastevent_timestamp < min_inactivity
        out = create_timeout_event(element.map, task_id) if @push_previous_map_as_event || @push_map_as_event_on_timeout
        @shared.maps[@task_id].delete(task_id)
        out
      end

      def reference_timestamp(event)
        @timeout_timestamp_field ? event.get(@timeout_timestamp_field).time : Time.now
      end

      def check_map_count_warning
        return if @map_count_warning_threshold == 0
        count = @shared.maps[@task_id].length
        if count >= @map_count_warning_threshold
          @events_since_last_warning ||= 0
          if @events_since_last_warning == 0
            @logger.warn("Aggregate filter memory warning: task_id pattern '#{@task_id}' has #{count} maps in memory (threshold: #{@map_count_warning_threshold}).")
          end
          @events_since_last_warning = (@events_since_last_warning + 1) % @map_count_warning_frequency
        else
          @events_since_last_warning = 0
        end
      end
    end
  end
end
